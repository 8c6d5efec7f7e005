package maps

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// accessMaps makes the maps of access control as the object declares
// them: the list trie, the MAC table, the settings and the TCP ports.
func accessMaps(t *testing.T) (list, mac, settings, ports *ebpf.Map) {
	t.Helper()
	testenv.RequireBPF(t)
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	var out []*ebpf.Map
	for _, name := range []string{bpf.XdpMapAccessList, bpf.XdpMapAccessMac, bpf.XdpMapAccessSettings, bpf.XdpMapTcpPorts} {
		m, err := ebpf.NewMap(spec.Maps[name])
		if err != nil {
			t.Fatalf("make %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		out = append(out, m)
	}
	return out[0], out[1], out[2], out[3]
}

// verdictIn is what the trie says of addr, as the fast path looks it up
// (a key of 128 bits finds the longest prefix): 0 when no prefix holds it.
func verdictIn(t *testing.T, list *ebpf.Map, addr netip.Addr) uint32 {
	t.Helper()
	k := prefixKey(netip.PrefixFrom(addr, addr.BitLen()))
	var v uint32
	if err := list.Lookup(&k, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return 0
		}
		t.Fatalf("look %s up: %v", addr, err)
	}
	return v
}

// verdictOf is the longest prefix of a's lists that holds addr, as
// WriteAccess should put them in force: 0 when none does.
func verdictOf(a Access, addr netip.Addr) uint32 {
	best, v := -1, uint32(0)
	for _, l := range []struct {
		ps []netip.Prefix
		v  uint32
	}{{a.Deny, accessDeny}, {a.Allow, accessAllow}} {
		for _, p := range l.ps {
			if p.Contains(addr) && p.Bits() > best {
				best, v = p.Bits(), l.v
			}
		}
	}
	return v
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// TestWriteAccess: the lists read back as written, the longest prefix
// says of an address, IPv4 and IPv6 alike, and a second write replaces
// the first.
func TestWriteAccess(t *testing.T) {
	list, mac, _, _ := accessMaps(t)
	a := Access{
		Deny:     prefixes("198.51.100.0/24", "2001:db8::/32", "203.0.113.7/32"),
		Allow:    prefixes("198.51.100.128/25", "2001:db8:1::/48"),
		DenyMAC:  []net.HardwareAddr{{0x02, 0, 0, 0, 0, 1}},
		AllowMAC: []net.HardwareAddr{{0x02, 0, 0, 0, 0, 2}},
	}
	if err := WriteAccess(list, mac, a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAccess(list, mac)
	if err != nil {
		t.Fatal(err)
	}
	want := Access{
		Deny:     prefixes("198.51.100.0/24", "203.0.113.7/32", "2001:db8::/32"),
		Allow:    prefixes("198.51.100.128/25", "2001:db8:1::/48"),
		DenyMAC:  a.DenyMAC,
		AllowMAC: a.AllowMAC,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read back %v, want %v", got, want)
	}
	for _, c := range []struct {
		addr string
		want uint32
	}{
		{"198.51.100.1", accessDeny}, {"198.51.100.200", accessAllow}, {"203.0.113.7", accessDeny},
		{"203.0.113.8", 0}, {"192.0.2.1", 0}, {"2001:db8:2::1", accessDeny}, {"2001:db8:1::1", accessAllow},
		{"2001:db9::1", 0},
	} {
		if v := verdictIn(t, list, netip.MustParseAddr(c.addr)); v != c.want {
			t.Errorf("%s: %d, want %d", c.addr, v, c.want)
		}
	}
	var v uint32
	if err := mac.Lookup(macKey{0x02, 0, 0, 0, 0, 1}, &v); err != nil || v != accessDeny {
		t.Errorf("denied MAC: %d, %v", v, err)
	}

	b := Access{Deny: prefixes("192.0.2.0/24"), AllowMAC: []net.HardwareAddr{{0x02, 0, 0, 0, 0, 1}}}
	if err := WriteAccess(list, mac, b); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadAccess(list, mac); err != nil || fmt.Sprint(got) != fmt.Sprint(b) {
		t.Errorf("after a second write: %v (%v), want %v", got, err, b)
	}
	if err := WriteAccess(list, mac, Access{}); err != nil {
		t.Fatal(err)
	}
	if got, err = ReadAccess(list, mac); err != nil || !got.Empty() {
		t.Errorf("after writing no lists: %v (%v), want nothing", got, err)
	}
}

// TestWriteAccessRefused: lists the fast path cannot hold, or that say
// two things of one prefix or MAC, are refused and change nothing.
func TestWriteAccessRefused(t *testing.T) {
	list, mac, _, _ := accessMaps(t)
	before := Access{Deny: prefixes("198.51.100.0/24"), DenyMAC: []net.HardwareAddr{{2, 0, 0, 0, 0, 9}}}
	if err := WriteAccess(list, mac, before); err != nil {
		t.Fatal(err)
	}
	many := make([]netip.Prefix, MaxAccessPrefixes+1)
	for i := range many {
		many[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
	}
	manyMACs := make([]net.HardwareAddr, MaxAccessMACs+1)
	for i := range manyMACs {
		manyMACs[i] = net.HardwareAddr{2, 0, 0, 0, byte(i >> 8), byte(i)}
	}
	for _, c := range []struct {
		name string
		a    Access
		want string
	}{
		{"both", Access{Deny: prefixes("192.0.2.0/24"), Allow: prefixes("192.0.2.0/24")}, "192.0.2.0/24 is both denied and allowed"},
		{"both once masked", Access{Deny: prefixes("192.0.2.0/24"), Allow: prefixes("192.0.2.9/24")}, "192.0.2.0/24 is both denied and allowed"},
		{"both mapped", Access{Deny: prefixes("192.0.2.0/24"), Allow: prefixes("::ffff:192.0.2.0/120")}, "is both denied and allowed"},
		{"mac both", Access{DenyMAC: []net.HardwareAddr{{2, 0, 0, 0, 0, 1}}, AllowMAC: []net.HardwareAddr{{2, 0, 0, 0, 0, 1}}}, "MAC 02:00:00:00:00:01 is both denied and allowed"},
		{"short mac", Access{DenyMAC: []net.HardwareAddr{{2, 0, 0, 0, 1}}}, "is not a MAC of 6 bytes"},
		{"long mac", Access{AllowMAC: []net.HardwareAddr{{2, 0, 0, 0, 0, 0, 0, 1}}}, "is not a MAC of 6 bytes"},
		{"too many prefixes", Access{Deny: many}, fmt.Sprintf("%d prefixes, the fast path holds at most %d", MaxAccessPrefixes+1, MaxAccessPrefixes)},
		{"too many macs", Access{DenyMAC: manyMACs}, fmt.Sprintf("%d MACs, the fast path holds at most %d", MaxAccessMACs+1, MaxAccessMACs)},
		{"invalid", Access{Deny: []netip.Prefix{{}}}, "invalid prefix"},
	} {
		err := WriteAccess(list, mac, c.a)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if got, err := ReadAccess(list, mac); err != nil || fmt.Sprint(got) != fmt.Sprint(before) {
			t.Errorf("%s: the lists are %v (%v) after a refused write, want %v", c.name, got, err, before)
		}
	}
}

// TestWriteAccessNoGap: while a reload writes, every address that the
// lists before and after judge alike is judged so at every step, read in
// the trie between the writer's steps; and the trie ends as the new
// lists say.
func TestWriteAccessNoGap(t *testing.T) {
	list, mac, _, _ := accessMaps(t)
	probes := addrs("10.0.0.1", "10.1.0.1", "10.1.200.1", "10.1.2.3", "10.1.2.200", "10.2.0.1", "11.0.0.1",
		"192.0.2.1", "192.0.2.130", "2001:db8::1", "2001:db8:0:1::1", "2001:db8:ffff::1")
	for _, c := range []struct {
		name     string
		old, new Access
	}{
		// An allow split in two: the source must never fall to the deny.
		{"split", Access{Deny: prefixes("10.0.0.0/8"), Allow: prefixes("10.1.0.0/16")},
			Access{Deny: prefixes("10.0.0.0/8"), Allow: prefixes("10.1.0.0/17", "10.1.128.0/17")}},
		// The reverse: two allows merged into one.
		{"merge", Access{Deny: prefixes("10.0.0.0/8"), Allow: prefixes("10.1.0.0/17", "10.1.128.0/17")},
			Access{Deny: prefixes("10.0.0.0/8"), Allow: prefixes("10.1.0.0/16")}},
		// Three nested levels gone, one wider in their place that says
		// what the innermost said.
		{"nest", Access{Allow: prefixes("10.0.0.0/8", "10.1.2.0/24"), Deny: prefixes("10.1.0.0/16")},
			Access{Allow: prefixes("8.0.0.0/5")}},
		// And back, the deny of the middle level appearing.
		{"unnest", Access{Allow: prefixes("8.0.0.0/5")},
			Access{Allow: prefixes("10.0.0.0/8", "10.1.2.0/24"), Deny: prefixes("10.1.0.0/16")}},
		// A prefix that changes side, beside ones that stay.
		{"flip", Access{Deny: prefixes("192.0.2.0/24", "2001:db8::/32"), Allow: prefixes("192.0.2.128/25", "2001:db8::/64")},
			Access{Allow: prefixes("192.0.2.0/24", "2001:db8::/48"), Deny: prefixes("192.0.2.128/25", "2001:db8::/32")}},
	} {
		if err := WriteAccess(list, mac, c.old); err != nil {
			t.Fatal(err)
		}
		steps := 0
		check := func() {
			steps++
			for _, a := range probes {
				before, after := verdictOf(c.old, a), verdictOf(c.new, a)
				if before != after {
					continue
				}
				if v := verdictIn(t, list, a); v != before {
					t.Errorf("%s: at step %d, %s is judged %d, where the lists before and after both say %d", c.name, steps, a, v, before)
				}
			}
		}
		if err := WriteAccessSteps(list, mac, c.new, check); err != nil {
			t.Fatal(err)
		}
		if steps == 0 {
			t.Errorf("%s: the writer took no step", c.name)
		}
		for _, a := range probes {
			if v, want := verdictIn(t, list, a), verdictOf(c.new, a); v != want {
				t.Errorf("%s: after the write, %s is judged %d, want %d", c.name, a, v, want)
			}
		}
	}
}

// TestWriteAccessFull: lists that fill the trie replace lists that fill
// it, none of their prefixes in common: there is no room for both, and
// the write still ends with the new lists.
func TestWriteAccessFull(t *testing.T) {
	list, mac, _, _ := accessMaps(t)
	fill := func(second byte) Access {
		var a Access
		for i := range MaxAccessPrefixes {
			a.Deny = append(a.Deny, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, second + byte(i>>8), byte(i), 0}), 24))
		}
		return a
	}
	for _, a := range []Access{fill(0), fill(128)} {
		if err := WriteAccess(list, mac, a); err != nil {
			t.Fatal(err)
		}
		got, err := ReadAccess(list, mac)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Deny) != MaxAccessPrefixes || !slices.Contains(got.Deny, a.Deny[0]) || !slices.Contains(got.Deny, a.Deny[len(a.Deny)-1]) {
			t.Errorf("read back %d prefixes, want the %d written", len(got.Deny), MaxAccessPrefixes)
		}
	}
}

// TestWriteAutoDeny: the window is written in eighths, IPv6 sources cut
// to a /64 unless told, the zero settings turn auto-deny off, and
// settings the fast path cannot count are refused.
func TestWriteAutoDeny(t *testing.T) {
	_, _, settings, _ := accessMaps(t)
	read := func() bpf.XdpCacAccessSettings {
		var v bpf.XdpCacAccessSettings
		if err := settings.Lookup(uint32(0), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := WriteAutoDeny(settings, AutoDeny{Refused: 20, Within: 10 * time.Second, DenyFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if v := read(); v.SlotNs != 1_250_000_000 || v.DenyForNs != uint64(time.Hour) || v.Refused != 20 || v.Ipv6Prefix != 64 {
		t.Errorf("written %+v, want slots of 1.25s, an hour, 20 refusals, /64", v)
	}
	if err := WriteAutoDeny(settings, AutoDeny{Refused: 3, Within: 800 * time.Millisecond, DenyFor: time.Minute, IPv6Prefix: 56}); err != nil {
		t.Fatal(err)
	}
	if v := read(); v.SlotNs != 100_000_000 || v.Ipv6Prefix != 56 || v.Refused != 3 {
		t.Errorf("written %+v, want slots of 100ms, /56, 3 refusals", v)
	}
	for _, bad := range []AutoDeny{
		{Refused: 1, Within: 7, DenyFor: time.Second},
		{Refused: 1, Within: time.Second + 1, DenyFor: time.Second},
		{Refused: 1, Within: time.Second},
		{Refused: 1, Within: time.Second, DenyFor: time.Second, IPv6Prefix: 129},
	} {
		if err := WriteAutoDeny(settings, bad); err == nil {
			t.Errorf("%+v written, want it refused", bad)
		}
	}
	if v := read(); v.SlotNs != 100_000_000 {
		t.Errorf("a refused write changed the settings: %+v", v)
	}
	if err := WriteAutoDeny(settings, AutoDeny{}); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != (bpf.XdpCacAccessSettings{}) {
		t.Errorf("auto-deny off wrote %+v, want zero (slot_ns 0)", v)
	}
}

// TestWriteTCPPorts: the SIP TCP ports read back; none is none.
func TestWriteTCPPorts(t *testing.T) {
	_, _, _, ports := accessMaps(t)
	for _, want := range [][]uint16{{5060, 5061}, {443, 5061, 65535}, nil} {
		if err := WriteTCPPorts(ports, want); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadTCPPorts(ports); err != nil || !slices.Equal(got, want) {
			t.Errorf("read back %v (%v), want %v", got, err, want)
		}
	}
	if err := WriteTCPPorts(ports, []uint16{0}); err == nil {
		t.Error("port 0 written, want it refused")
	}
}

// TestPolicyWordAccess: the policy word says the lists hold something
// and auto-deny is on when the policy says so, and nothing else changes.
func TestPolicyWordAccess(t *testing.T) {
	var p policy.Policy
	base := policyWordOf(1, p)
	p.AccessLists = true
	if w := policyWordOf(1, p); w != base|policyAccessLists || w&policyAutoDeny != 0 {
		t.Errorf("word with access lists %#x, want %#x", w, base|policyAccessLists)
	}
	p.AccessLists, p.AutoDeny = false, true
	if w := policyWordOf(1, p); w != base|policyAutoDeny {
		t.Errorf("word with auto-deny %#x, want %#x", w, base|policyAutoDeny)
	}
}
