package maps

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
)

// Access is what the static lists of access control hold
// (docs/design.md, "Access control"): IPv4 and IPv6 prefixes, a bare
// address being a /32 or /128, denied or allowed, the longest prefix of a
// source saying; and MACs, for PPPoE.
type Access struct {
	Deny, Allow       []netip.Prefix
	DenyMAC, AllowMAC []net.HardwareAddr
}

// Empty reports whether the lists hold nothing: the fast path then never
// looks at them (POLICY_ACCESS_LISTS clear).
func (a Access) Empty() bool {
	return len(a.Deny) == 0 && len(a.Allow) == 0 && len(a.DenyMAC) == 0 && len(a.AllowMAC) == 0
}

// AutoDeny is auto-deny (docs/design.md, "Auto-deny"): a source refused
// Refused times within Within is denied for DenyFor. Its zero value is
// auto-deny off.
type AutoDeny struct {
	Refused         uint32
	Within, DenyFor time.Duration
	// IPv6Prefix is the bits of an IPv6 source that are one source, as
	// the per-source buckets cut it; 0 is the default, 64.
	IPv6Prefix uint8
}

// On reports whether a is auto-deny on.
func (a AutoDeny) On() bool { return a.Refused > 0 }

// DefaultIPv6Prefix is the IPv6 prefix an AutoDeny without one cuts
// sources to: a host has a /64 to roam in.
const DefaultIPv6Prefix = 64

// The capacities of the static lists, as bpf/shared.h sizes their maps.
const (
	MaxAccessPrefixes = int(bpf.XdpCacAccessCAC_MAX_ACCESS_PREFIXES)
	MaxAccessMACs     = int(bpf.XdpCacAccessCAC_MAX_ACCESS_MACS)
	// DenySlots is how many slots of the window a source's refusals
	// are counted in: the window must be a whole number of nanoseconds
	// of each.
	DenySlots = int(bpf.XdpCacAccessCAC_DENY_SLOTS)
)

// The values of the static lists: enum cac_access.
const (
	accessDeny  = uint32(bpf.XdpCacAccessCAC_ACCESS_DENY)
	accessAllow = uint32(bpf.XdpCacAccessCAC_ACCESS_ALLOW)
)

// macKey is the access_mac key of a MAC: its six bytes first, in order.
type macKey [8]byte

// WriteAccess puts the static lists of a in force in the access_list trie
// and the access_mac table (WriteAccessSteps).
func WriteAccess(list, mac *ebpf.Map, a Access) error {
	return WriteAccessSteps(list, mac, a, nil)
}

// WriteAccessSteps is WriteAccess calling step, when set, after each
// entry it writes or deletes: tests read the maps there.
//
// A reload never clears and fills: a source that the lists in force and
// a's agree on is never judged otherwise, at any moment of the write.
// The new entries go in first, longest prefix first, then the entries
// gone are deleted, shortest first. So at every moment a source's
// longest match is either the longest of the lists before (when it is an
// entry gone, or one not yet written) or of the lists after. The trie
// must hold both for that: when the entries in force and those of a
// together pass its capacity, the ones gone are deleted first, and for
// that moment a source may fall to a shorter prefix.
func WriteAccessSteps(list, mac *ebpf.Map, a Access, step func()) error {
	if step == nil {
		step = func() {}
	}
	prefixes, err := accessPrefixes(a)
	if err != nil {
		return err
	}
	macs, err := accessMACs(a)
	if err != nil {
		return err
	}
	if err := writeAccessList(list, prefixes, step); err != nil {
		return err
	}
	return writeAccessMACs(mac, macs, step)
}

// accessPrefixes are the trie's entries for a: each prefix masked and
// mapped as the accounts' (prefixKey). A prefix both denied and allowed
// is refused.
func accessPrefixes(a Access) (map[bpf.XdpCacPrefix]uint32, error) {
	if n := len(a.Deny) + len(a.Allow); n > MaxAccessPrefixes {
		return nil, fmt.Errorf("access lists: %d prefixes, the fast path holds at most %d", n, MaxAccessPrefixes)
	}
	out := make(map[bpf.XdpCacPrefix]uint32, len(a.Deny)+len(a.Allow))
	add := func(ps []netip.Prefix, v uint32) error {
		for _, p := range ps {
			if !p.IsValid() {
				return fmt.Errorf("access lists: invalid prefix %v", p)
			}
			k := prefixKey(p.Masked())
			if was, ok := out[k]; ok && was != v {
				return fmt.Errorf("access lists: %s is both denied and allowed", p.Masked())
			}
			out[k] = v
		}
		return nil
	}
	if err := add(a.Deny, accessDeny); err != nil {
		return nil, err
	}
	if err := add(a.Allow, accessAllow); err != nil {
		return nil, err
	}
	return out, nil
}

// accessMACs are access_mac's entries for a.
func accessMACs(a Access) (map[macKey]uint32, error) {
	if n := len(a.DenyMAC) + len(a.AllowMAC); n > MaxAccessMACs {
		return nil, fmt.Errorf("access lists: %d MACs, the fast path holds at most %d", n, MaxAccessMACs)
	}
	out := make(map[macKey]uint32, len(a.DenyMAC)+len(a.AllowMAC))
	add := func(ms []net.HardwareAddr, v uint32) error {
		for _, m := range ms {
			if len(m) != 6 {
				return fmt.Errorf("access lists: %v is not a MAC of 6 bytes", m)
			}
			var k macKey
			copy(k[:], m)
			if was, ok := out[k]; ok && was != v {
				return fmt.Errorf("access lists: MAC %v is both denied and allowed", m)
			}
			out[k] = v
		}
		return nil
	}
	if err := add(a.DenyMAC, accessDeny); err != nil {
		return nil, err
	}
	if err := add(a.AllowMAC, accessAllow); err != nil {
		return nil, err
	}
	return out, nil
}

// readEntries reads every entry of a map of the static lists.
func readEntries[K comparable](m *ebpf.Map, what string) (map[K]uint32, error) {
	out := map[K]uint32{}
	var k K
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		out[k] = v
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

// writeAccessList makes the trie hold want: adds and changes longest
// first, then deletions shortest first (WriteAccessSteps).
func writeAccessList(m *ebpf.Map, want map[bpf.XdpCacPrefix]uint32, step func()) error {
	have, err := readEntries[bpf.XdpCacPrefix](m, "access list")
	if err != nil {
		return err
	}
	var put, gone []bpf.XdpCacPrefix
	for k, v := range want {
		if was, ok := have[k]; !ok || was != v {
			put = append(put, k)
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	longest := func(a, b bpf.XdpCacPrefix) int { return cmp.Compare(b.Prefixlen, a.Prefixlen) }
	slices.SortFunc(put, longest)
	slices.SortFunc(gone, func(a, b bpf.XdpCacPrefix) int { return longest(b, a) })
	del := func() error {
		for _, k := range gone {
			if err := m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("delete %s from the access list: %w", prefixOfKey(k), err)
			}
			step()
		}
		gone = nil
		return nil
	}
	if countNew(have, want) > int(m.MaxEntries())-len(have) {
		if err := del(); err != nil { // no room for both
			return err
		}
	}
	for _, k := range put {
		if err := m.Update(&k, want[k], ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write %s to the access list: %w", prefixOfKey(k), err)
		}
		step()
	}
	return del()
}

// countNew is how many keys of want have is without.
func countNew[K comparable](have, want map[K]uint32) int {
	n := 0
	for k := range want {
		if _, ok := have[k]; !ok {
			n++
		}
	}
	return n
}

// writeAccessMACs makes access_mac hold want: adds and changes first, then
// deletions. A MAC is one entry: no order among them matters.
func writeAccessMACs(m *ebpf.Map, want map[macKey]uint32, step func()) error {
	have, err := readEntries[macKey](m, "access MACs")
	if err != nil {
		return err
	}
	var gone []macKey
	for k := range have {
		if _, ok := want[k]; !ok {
			gone = append(gone, k)
		}
	}
	del := func() error {
		for _, k := range gone {
			if err := m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("delete MAC %v from the access list: %w", net.HardwareAddr(k[:6]), err)
			}
			step()
		}
		gone = nil
		return nil
	}
	if countNew(have, want) > int(m.MaxEntries())-len(have) {
		if err := del(); err != nil { // no room for both
			return err
		}
	}
	for k, v := range want {
		if was, ok := have[k]; ok && was == v {
			continue
		}
		if err := m.Update(&k, v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write MAC %v to the access list: %w", net.HardwareAddr(k[:6]), err)
		}
		step()
	}
	return del()
}

// ReadAccess reads the static lists in force back: IPv4 prefixes as
// IPv4, each list in increasing order.
func ReadAccess(list, mac *ebpf.Map) (Access, error) {
	var a Access
	prefixes, err := readEntries[bpf.XdpCacPrefix](list, "access list")
	if err != nil {
		return a, err
	}
	for k, v := range prefixes {
		p := prefixOfKey(k)
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		switch v {
		case accessDeny:
			a.Deny = append(a.Deny, p)
		case accessAllow:
			a.Allow = append(a.Allow, p)
		}
	}
	macs, err := readEntries[macKey](mac, "access MACs")
	if err != nil {
		return a, err
	}
	for k, v := range macs {
		hw := net.HardwareAddr(append([]byte(nil), k[:6]...))
		switch v {
		case accessDeny:
			a.DenyMAC = append(a.DenyMAC, hw)
		case accessAllow:
			a.AllowMAC = append(a.AllowMAC, hw)
		}
	}
	byPrefix := func(x, y netip.Prefix) int {
		return cmp.Or(x.Addr().Compare(y.Addr()), cmp.Compare(x.Bits(), y.Bits()))
	}
	slices.SortFunc(a.Deny, byPrefix)
	slices.SortFunc(a.Allow, byPrefix)
	byMAC := func(x, y net.HardwareAddr) int { return slices.Compare(x, y) }
	slices.SortFunc(a.DenyMAC, byMAC)
	slices.SortFunc(a.AllowMAC, byMAC)
	return a, nil
}

// WriteAutoDeny writes the auto-deny settings; the zero AutoDeny turns
// auto-deny off (slot_ns 0). The window is counted in DenySlots slots
// (docs/design.md, "Auto-deny"): it must be a whole number of
// nanoseconds of each.
func WriteAutoDeny(m *ebpf.Map, a AutoDeny) error {
	var v bpf.XdpCacAccessSettings
	if a.On() {
		if a.Within <= 0 || a.Within%time.Duration(DenySlots) != 0 {
			return fmt.Errorf("write auto-deny settings: the window %v is not %d whole slots of nanoseconds", a.Within, DenySlots)
		}
		if a.DenyFor <= 0 {
			return fmt.Errorf("write auto-deny settings: deny-for %v is not positive", a.DenyFor)
		}
		if a.IPv6Prefix > 128 {
			return fmt.Errorf("write auto-deny settings: IPv6 prefix /%d is longer than an address", a.IPv6Prefix)
		}
		v.SlotNs = uint64(a.Within / time.Duration(DenySlots))
		v.DenyForNs = uint64(a.DenyFor)
		v.Refused = a.Refused
		v.Ipv6Prefix = a.IPv6Prefix
		if v.Ipv6Prefix == 0 {
			v.Ipv6Prefix = DefaultIPv6Prefix
		}
	}
	if err := m.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write auto-deny settings: %w", err)
	}
	return nil
}

// WriteTCPPorts replaces the SIP TCP port table: a SYN to one of sip is
// a sip-connect; none, and no SYN is. The kernel copies the value word by
// word, so a port is seen as it was or as it will be.
func WriteTCPPorts(m *ebpf.Map, sip []uint16) error {
	var v bpf.XdpCacTcpPorts
	for _, p := range sip {
		if p == 0 {
			return fmt.Errorf("write tcp_ports map: port 0 is no port")
		}
		v.Sip[p] = 1
	}
	if err := m.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write tcp_ports map: %w", err)
	}
	return nil
}

// ReadTCPPorts reads the SIP TCP ports in force, in increasing order.
func ReadTCPPorts(m *ebpf.Map) ([]uint16, error) {
	var v bpf.XdpCacTcpPorts
	if err := m.Lookup(uint32(0), &v); err != nil {
		return nil, fmt.Errorf("read tcp_ports map: %w", err)
	}
	var out []uint16
	for p, on := range v.Sip {
		if on != 0 {
			out = append(out, uint16(p))
		}
	}
	return out, nil
}
