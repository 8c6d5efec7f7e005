package fastpath

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/access"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// listed is a prefix as the access_list trie keys it: IPv4 mapped into
// IPv6, masked.
func listed(s string) netip.Prefix {
	p := netip.MustParsePrefix(s).Masked()
	if p.Addr().Is4() {
		return netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), p.Bits()+96)
	}
	return p
}

func inviteFrom(src netip.Addr, callID string) []byte {
	if src.Is4() {
		return harness.InviteFrom(src, callID)
	}
	return Frame(Ether{}, IPv6{Src: src}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", callID))
}

var deniedMAC = [6]byte{0x02, 0, 0x5e, 0, 0x53, 0x01}

func testLists() access.Lists {
	return access.Lists{
		Prefixes: map[netip.Prefix]access.Verdict{
			listed("203.0.113.0/24"): access.Deny, listed("203.0.113.128/25"): access.Allow,
			listed("203.0.113.200/32"): access.Deny, listed("2001:db8:bad::/48"): access.Deny,
			listed("2001:db8:bad:1::/64"): access.Allow,
		},
		MACs: map[[6]byte]access.Verdict{deniedMAC: access.Deny},
	}
}

// TestAccessLists: the static lists by longest prefix, allow inside deny
// and deny inside that allow, IPv4 and IPv6, and by MAC for PPPoE; a
// denied frame is dropped and counted in its class only where the class
// shows before the parse.
func TestAccessLists(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetAccess(t, testLists(), access.Settings{})
	f.MustAt(t, 1e9)
	syn := tcpSegment(40000, 5061, tcpSYN, 0)
	for name, c := range map[string]struct {
		frame  []byte
		denied bool
		known  bool
	}{
		"v4 deny":             {inviteFrom(netip.MustParseAddr("203.0.113.1"), "a"), true, false},
		"v4 allow in deny":    {inviteFrom(netip.MustParseAddr("203.0.113.129"), "b"), false, false},
		"v4 deny in allow":    {inviteFrom(netip.MustParseAddr("203.0.113.200"), "c"), true, false},
		"v4 unlisted":         {inviteFrom(netip.MustParseAddr("198.51.100.1"), "d"), false, false},
		"v6 deny":             {inviteFrom(netip.MustParseAddr("2001:db8:bad::1"), "e"), true, false},
		"v6 allow in deny":    {inviteFrom(netip.MustParseAddr("2001:db8:bad:1::1"), "f"), false, false},
		"v4 sip-connect":      {Frame(Ether{}, IPv4{Src: netip.MustParseAddr("203.0.113.2"), Proto: 6}, syn), true, true},
		"v6 sip-connect":      {Frame(Ether{}, IPv6{Src: netip.MustParseAddr("2001:db8:bad::9"), Next: 6}, syn), true, true},
		"v4 syn-ack":          {Frame(Ether{}, IPv4{Src: netip.MustParseAddr("203.0.113.2"), Proto: 6}, tcpSegment(40000, 5061, tcpSYN|tcpACK, 0)), false, false},
		"v4 unwatched port":   {Frame(Ether{}, IPv4{Src: netip.MustParseAddr("203.0.113.2")}, UDP{Dst: 53}), false, false},
		"v4 malformed":        {Frame(Ether{}, IPv4{Src: netip.MustParseAddr("203.0.113.2"), TotLen: 4000}, UDP{Dst: 5060}), true, false},
		"mac padi":            {Frame(Ether{Src: deniedMAC, Broadcast: true}, PPPoE{Code: PADI}), true, true},
		"mac padr":            {Frame(Ether{Src: deniedMAC}, PPPoE{Code: PADR}), true, true},
		"mac padt":            {Frame(Ether{Src: deniedMAC}, PPPoE{Code: PADT}), true, false},
		"other mac padi":      {Frame(Ether{Src: [6]byte{2}, Broadcast: true}, PPPoE{Code: PADI}), false, false},
		"mac of an IP packet": {Frame(Ether{Src: deniedMAC}, IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag)), false, false},
	} {
		d, err := f.Decide(c.frame)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if (d.Denied == access.Deny) != c.denied || (c.denied && (d.Verdict != cac.Drop || d.Rejected != c.known)) {
			t.Errorf("%s: %v (denied %v), want denied %v, class known %v", name, d, d.Denied, c.denied, c.known)
		}
	}
}

// autoDenyPolicy refuses a second INVITE of a source (per-source), and
// holds PADIs by their class alone.
func autoDenyPolicy(t *testing.T) policy.Policy {
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	p.Levels[cac.SIPOptions] = harness.MustRate(t, 0.001, 1)
	return p
}

// TestAutoDenyTiming: refused-1 refusals of a source's own doing in the
// window leave it alone; the refused-th denies it from the next frame,
// whose parse is spared, until deny-for is over; a refusal that fell out
// of the window by a slot no longer counts; a shared level's refusals,
// agents and allowed sources are never counted.
func TestAutoDenyTiming(t *testing.T) {
	const second = uint64(1e9)
	const slot = second / 8 // within 1s
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, autoDenyPolicy(t))
	agent := netip.MustParseAddr("198.51.100.7")
	f.SetAgentAddrs(t, map[netip.Addr]int{agent: 0})
	set := access.Settings{SlotNS: slot, DenyForNS: 30 * second, Refused: 4, IPv6Prefix: 64}
	f.SetAccess(t, testLists(), set)

	decide := func(frame []byte, at uint64) (d struct{ rejected, denied bool }) {
		t.Helper()
		f.MustAt(t, at)
		got, err := f.Decide(frame)
		if err != nil {
			t.Fatalf("at %d: %v", at, err)
		}
		d.rejected, d.denied = got.Rejected, got.Denied == access.Auto
		return d
	}
	src := netip.MustParseAddr("192.0.2.10")
	base := 100 * second
	decide(inviteFrom(src, "c0"), base) // the one call the bucket allows
	// Three refusals, one a slot: not yet.
	for i := 1; i <= 3; i++ {
		if d := decide(inviteFrom(src, f.NextCall()), base+uint64(i)*slot); !d.rejected || d.denied {
			t.Fatalf("refusal %d: %+v", i, d)
		}
	}
	// The first of them (slot 1) leaves the window at slot 9: the fourth
	// refusal there finds three, and the fifth, four.
	if d := decide(inviteFrom(src, f.NextCall()), base+9*slot); d.denied || f.Model.Access.Len() != 0 {
		t.Fatalf("a refusal a window old still counted: %+v", d)
	}
	at := base + 9*slot + slot/2
	decide(inviteFrom(src, f.NextCall()), at)
	if st := f.Stats(t); st.DenyAdded != 1 {
		t.Fatalf("deny_added %d after refused refusals, want 1", st.DenyAdded)
	}
	// Denied from the next frame, until deny-for is over.
	if d := decide(inviteFrom(src, f.NextCall()), at+1); !d.denied {
		t.Fatalf("the next frame: %+v, want denied", d)
	}
	if d := decide(inviteFrom(src, f.NextCall()), at+set.DenyForNS-1); !d.denied {
		t.Fatalf("the last moment: %+v, want denied", d)
	}
	if d := decide(inviteFrom(src, f.NextCall()), at+set.DenyForNS); d.denied {
		t.Fatalf("at until: %+v, want released", d)
	}

	// Never counted: a class level's refusals, an agent, an allowed source.
	options := func(s netip.Addr) []byte {
		return Frame(Ether{}, IPv4{Src: s}, UDP{Dst: 5060}, SIPRequest("OPTIONS", harness.ToNoTag).With("Call-ID", f.NextCall()))
	}
	later := at + 2*set.DenyForNS
	for i, s := range []netip.Addr{netip.MustParseAddr("192.0.2.20"), agent, netip.MustParseAddr("203.0.113.130")} {
		for n := uint64(0); n < 10; n++ {
			now := later + uint64(i)*second + n
			if i == 0 { // refused by the class only
				if d := decide(options(s), now); n > 0 && !d.rejected {
					t.Fatalf("OPTIONS %d passed", n)
				}
				continue
			}
			if d := decide(inviteFrom(s, f.NextCall()), now); n > 0 && !d.rejected {
				t.Fatalf("INVITE %d from %v passed", n, s)
			}
		}
	}
	if st := f.Stats(t); st.DenyAdded != 1 {
		t.Errorf("deny_added %d: a shared level's refusal, an agent or an allowed source was counted", st.DenyAdded)
	}
}

// TestAccessDifferential holds the program to the model over random
// frames from a few sources, some listed, under per-source limits that
// refuse them and auto-deny that then denies them, the clock moving by
// random steps across slots and deny-for.
func TestAccessDifferential(t *testing.T) {
	f := harness.NewFastPath(t, false)
	p := autoDenyPolicy(t)
	p.PerSource[cac.SIPConnect] = policy.PerSource{Limit: harness.MustRate(t, 1, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	p.PerSource[cac.PPPoEPADI] = policy.PerSource{Limit: harness.MustRate(t, 1, 1), Key: policy.SourceMAC}
	p.Levels[cac.ClassMalformed] = harness.MustRate(t, 1, 1)
	f.SetPolicy(t, p)
	f.SetAgentAddrs(t, map[netip.Addr]int{netip.MustParseAddr("198.51.100.7"): 0})
	f.SetAccess(t, testLists(), access.Settings{SlotNS: 1e8, DenyForNS: 3e9, Refused: 3, IPv6Prefix: 56})
	sources := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("192.0.2.10"),
		netip.MustParseAddr("203.0.113.5"), netip.MustParseAddr("203.0.113.130"), netip.MustParseAddr("2001:db8::1"),
		netip.MustParseAddr("2001:db8:0:1::1"), netip.MustParseAddr("2001:db8:bad:1::1")}
	macs := [][6]byte{deniedMAC, {2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}

	rng := rand.New(rand.NewPCG(diffSeed(t), 0xacce55))
	kinds := decideRandom(t, f, rng, 60, func() []byte {
		switch s := sources[rng.IntN(len(sources))]; rng.IntN(4) {
		case 0:
			return randomSegment(rng, sources)
		case 1:
			frame := inviteFrom(s, f.NextCall())
			if rng.IntN(4) == 0 {
				frame = frame[:14+rng.IntN(len(frame)-14)]
			}
			return frame
		case 2:
			codes := []uint8{PADI, PADR, PADT, uint8(rng.Uint32())}
			return Frame(Ether{Src: macs[rng.IntN(len(macs))]}, PPPoE{Code: codes[rng.IntN(len(codes))]})
		default:
			return mutate(rng, inviteFrom(s, f.NextCall()))
		}
	})
	if st := f.Stats(t); st.DenyAdded == 0 || kinds["denied"] == 0 {
		t.Errorf("nothing auto-denied (deny_added %d): the generator tests nothing there", st.DenyAdded)
	}
}
