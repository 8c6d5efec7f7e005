package api

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
)

// RejectFilter is what of the records `show rejects` keeps.
type RejectFilter struct {
	class, reason string
	since         time.Duration
	source        func(string) bool // nil keeps every source
}

// NewRejectFilter checks the names and parses the source of a filter.
func NewRejectFilter(class, reason, source string, since time.Duration) (RejectFilter, error) {
	f := RejectFilter{class: class, reason: reason, since: since}
	if class != "" {
		if _, err := cac.ParseClass(class); err != nil {
			return f, fmt.Errorf("--class: %w", err)
		}
	}
	if reason != "" {
		if _, err := cac.ParseReason(reason); err != nil && !slices.ContainsFunc(cac.EgressReasons(), func(r cac.EgressReason) bool {
			return r.String() == reason
		}) {
			return f, fmt.Errorf("--reason: %w (or at egress: connection, agent-down)", err)
		}
	}
	if since < 0 {
		return f, fmt.Errorf("--since must not be negative, got %v", since)
	}
	if source != "" {
		match, err := sourceMatcher(source)
		if err != nil {
			return f, err
		}
		f.source = match
	}
	return f, nil
}

// sourceMatcher matches a record's source to --source: an address, a
// prefix (IPv4 sources also match as IPv4-mapped IPv6), or a MAC.
func sourceMatcher(s string) (func(string) bool, error) {
	if mac, err := net.ParseMAC(s); err == nil {
		return func(src string) bool { return strings.EqualFold(src, mac.String()) }, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return nil, fmt.Errorf("--source: want an address, a prefix or a MAC, got %q", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return func(src string) bool {
		a, err := netip.ParseAddr(src)
		return err == nil && p.Contains(a.Unmap())
	}, nil
}

// Keep is the lines f keeps, wall being now.
func (f RejectFilter) Keep(lines []RejectLine, wall time.Time) []RejectLine {
	out := lines[:0:0]
	for _, l := range lines {
		if (f.class == "" || l.Class == f.class) && (f.reason == "" || l.Reason == f.reason) &&
			(f.since == 0 || wall.Sub(l.Time) <= f.since) && (f.source == nil || f.source(l.Source)) {
			out = append(out, l)
		}
	}
	return out
}

// RollUp returns lines with each IP source replaced by the prefix of v4
// bits (an IPv4 source) or v6 bits (IPv6) that holds it, for Biggest to
// sum per prefix: where a flood comes from, as Kamailio's pike.top rolls
// up its hot sources. 0 leaves a family as recorded; a MAC, and "other
// sources", stay as they are.
func RollUp(lines []RejectLine, v4, v6 int) []RejectLine {
	out := make([]RejectLine, len(lines))
	for i, l := range lines {
		out[i] = l
		a, err := netip.ParseAddr(l.Source)
		if err != nil {
			continue
		}
		bits := v6
		if a.Is4() {
			bits = v4
		}
		if bits > 0 && bits < a.BitLen() {
			p, _ := a.Prefix(bits) // bits is within the family's length
			out[i].Source = p.String()
		}
	}
	return out
}

// CheckPrefixLen checks a --prefix or --prefix6 length: 0 (as recorded)
// up to the family's bits.
func CheckPrefixLen(flag string, bits, max int) error {
	if bits < 0 || bits > max {
		return fmt.Errorf("%s wants a prefix length from 1 to %d (0: as recorded), got %d", flag, max, bits)
	}
	return nil
}

// Biggest sums the records of each interface, source, class, reason and rule
// (first and last of all of them) and keeps the n with the most rejects.
func Biggest(lines []RejectLine, n int) []RejectLine {
	type key struct{ iface, source, class, reason, rule string }
	sums := map[key]*RejectLine{}
	for _, l := range lines {
		k := key{l.Interface, l.Source, l.Class, l.Reason, l.Rule}
		s, ok := sums[k]
		if !ok {
			c := l
			sums[k] = &c
			continue
		}
		s.Count += l.Count
		if l.Time.After(s.Time) {
			s.Time = l.Time
		}
		if l.First.Before(s.First) {
			s.First = l.First
		}
	}
	out := make([]RejectLine, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b RejectLine) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return b.Time.Compare(a.Time)
	})
	return out[:min(n, len(out))]
}
