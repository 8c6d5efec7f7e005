package access

import (
	"net/netip"
	"testing"
)

func src(s string) Source {
	a := netip.MustParseAddr(s)
	if a.Is4() {
		return Source{Family: 4, Addr: a}
	}
	return Source{Family: 6, Addr: a}
}

// TestListsLongestPrefix: an allow inside a deny, and a deny inside that
// allow, are found by the longest prefix; IPv4 is read mapped into IPv6;
// a MAC is its own list.
func TestListsLongestPrefix(t *testing.T) {
	mapped := func(s string) netip.Prefix {
		p := netip.MustParsePrefix(s)
		if p.Addr().Is4() {
			return netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), p.Bits()+96)
		}
		return p
	}
	mac := [6]byte{2, 0, 0, 0, 0, 9}
	l := Lists{
		Prefixes: map[netip.Prefix]Verdict{
			mapped("203.0.113.0/24"): Deny, mapped("203.0.113.128/25"): Allow, mapped("203.0.113.200/32"): Deny,
			mapped("2001:db8::/32"): Allow, mapped("2001:db8:bad::/48"): Deny,
		},
		MACs: map[[6]byte]Verdict{mac: Deny},
	}
	for s, want := range map[string]Verdict{
		"203.0.113.1": Deny, "203.0.113.129": Allow, "203.0.113.200": Deny, "198.51.100.1": None,
		"2001:db8::1": Allow, "2001:db8:bad::1": Deny, "2001:db9::1": None,
		"::ffff:203.0.113.1": Deny, // an IPv6 source that is a mapped IPv4 one
	} {
		if got := l.Of(src(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
	if got := l.Of(Source{MAC: mac}); got != Deny {
		t.Errorf("MAC: %v, want deny", got)
	}
	if got := l.Of(Source{MAC: [6]byte{2}}); got != None {
		t.Errorf("another MAC: %v, want none", got)
	}
}

// TestAutoDenyWindow: refused-1 refusals in the window leave a source
// alone, the refused-th denies it until deny-for is over; refusals that
// fell out of the window (eight slots) no longer count.
func TestAutoDenyWindow(t *testing.T) {
	const slot, refused = 1000, 4
	newTable := func() *Table {
		return &Table{AutoDeny: true, Settings: Settings{SlotNS: slot, DenyForNS: 50_000, Refused: refused, IPv6Prefix: 64}}
	}
	s := src("192.0.2.7")
	tb := newTable()
	for i := 0; i < refused-1; i++ {
		tb.Count(s, uint64(10_000+i*slot))
	}
	if tb.Check(s, 13_000) != None || tb.Added != 0 {
		t.Fatalf("denied after %d refusals", refused-1)
	}
	tb.Count(s, 13_500)
	if tb.Check(s, 13_501) != Auto || tb.Added != 1 {
		t.Fatalf("not denied after %d refusals", refused)
	}
	d, _ := tb.Denied(tb.Settings.KeyOf(s))
	if d.SinceNS != 13_500 || d.UntilNS != 63_500 || d.Refusals != refused || d.Frames != 1 {
		t.Errorf("entry %+v", d)
	}
	if tb.Check(s, 63_499) != Auto || tb.Check(s, 63_500) != None {
		t.Error("not released at until")
	}

	// The first refusal at tick 10 leaves the window at tick 18: the
	// fourth, at tick 18, finds three.
	tb = newTable()
	for _, at := range []uint64{10_000, 11_000, 12_000, 18_000} {
		tb.Count(s, at)
	}
	if tb.Added != 0 {
		t.Error("a refusal eight slots old still counted")
	}
	tb.Count(s, 18_999) // the same tick: four in the window
	if tb.Added != 1 {
		t.Error("four refusals in the window did not deny")
	}
	// A refusal from before the newest tick counts in the newest.
	tb = newTable()
	for _, at := range []uint64{20_000, 27_000, 19_000, 26_000} {
		tb.Count(s, at)
	}
	if tb.Added != 1 {
		t.Error("a late refusal was not counted")
	}
}

// TestAutoDenyNeverCounted: agents and allowed sources are never counted;
// IPv6 sources are counted by their prefix.
func TestAutoDenyNeverCounted(t *testing.T) {
	agent, allowed := src("198.51.100.7"), src("203.0.113.9")
	tb := &Table{AutoDeny: true, Settings: Settings{SlotNS: 1000, DenyForNS: 1e9, Refused: 2, IPv6Prefix: 64},
		Agents: map[netip.Addr]bool{agent.Mapped(): true},
		Lists:  Lists{Prefixes: map[netip.Prefix]Verdict{netip.PrefixFrom(allowed.Mapped(), 128): Allow}}}
	for i := 0; i < 10; i++ {
		tb.Count(agent, uint64(i))
		tb.Count(allowed, uint64(i))
	}
	if tb.Added != 0 {
		t.Errorf("%d sources denied, want none", tb.Added)
	}
	tb.Count(src("2001:db8::1"), 1)
	tb.Count(src("2001:db8::2"), 2)
	if tb.Check(src("2001:db8::ffff"), 3) != Auto || tb.Check(src("2001:db8:0:1::1"), 3) != None {
		t.Error("an IPv6 /64 not denied as one source")
	}
}
