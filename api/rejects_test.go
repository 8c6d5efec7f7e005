package api_test

import (
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
)

// TestRejectsTopAndSource: --top sums each source, class and reason and
// keeps the biggest; --source keeps an address, a prefix or a MAC.
func TestRejectsTopAndSource(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	line := func(src string, count uint64, s int) api.RejectLine {
		return api.RejectLine{Time: at.Add(time.Duration(s) * time.Second), First: at.Add(time.Duration(s) * time.Second),
			Interface: "eth1", Class: "sip-invite", Source: src, Reason: "source", Count: count}
	}
	lines := []api.RejectLine{
		line("203.0.113.7", 5, 0), line("203.0.113.7", 7, 1), line("198.51.100.1", 10, 1),
		line("2001:db8::1", 1, 2), line("02:00:00:00:00:01", 3, 2),
	}
	top := api.Biggest(lines, 2)
	if len(top) != 2 || top[0].Source != "203.0.113.7" || top[0].Count != 12 || !top[0].First.Equal(at) ||
		!top[0].Time.Equal(at.Add(time.Second)) || top[1].Source != "198.51.100.1" {
		t.Errorf("top 2: %+v", top)
	}
	for src, want := range map[string]int{
		"203.0.113.0/24": 2, "203.0.113.7": 2, "2001:db8::/32": 1, "02:00:00:00:00:01": 1, "192.0.2.1": 0,
	} {
		f, err := api.NewRejectFilter("", "", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(f.Keep(lines, at)); got != want {
			t.Errorf("--source %s: %d lines, want %d", src, got, want)
		}
	}
	if _, err := api.NewRejectFilter("", "", "not-a-source", 0); err == nil {
		t.Error("--source not-a-source: accepted")
	}
}

// TestRejectsRollUp: --prefix and --prefix6 sum the sources of a network
// into one line, leave MACs and what is shorter alone, and 0 leaves a
// family as recorded.
func TestRejectsRollUp(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	line := func(src string, count uint64) api.RejectLine {
		return api.RejectLine{Time: at, First: at, Interface: "eth1", Class: "sip-invite", Source: src, Reason: "source", Count: count}
	}
	lines := []api.RejectLine{
		line("203.0.113.7", 5), line("203.0.113.200", 7), line("198.51.100.1", 10),
		line("2001:db8:1:2::1", 1), line("2001:db8:1:3::9", 2), line("2001:db8:2::1", 4),
		line("02:00:00:00:00:01 vlan 7", 3), line("other sources", 6),
	}
	top := api.Biggest(api.RollUp(lines, 24, 48), 10)
	got := map[string]uint64{}
	for _, l := range top {
		got[l.Source] = l.Count
	}
	want := map[string]uint64{
		"203.0.113.0/24": 12, "198.51.100.0/24": 10, "2001:db8:1::/48": 3, "2001:db8:2::/48": 4,
		"02:00:00:00:00:01 vlan 7": 3, "other sources": 6,
	}
	if len(got) != len(want) {
		t.Errorf("rolled up: %v, want %v", got, want)
	}
	for src, n := range want {
		if got[src] != n {
			t.Errorf("%s: %d, want %d (all: %v)", src, got[src], n, got)
		}
	}
	if top[0].Source != "203.0.113.0/24" {
		t.Errorf("the biggest is %s, want 203.0.113.0/24", top[0].Source)
	}
	// IPv6 as recorded; the input unchanged.
	v4only := api.RollUp(lines, 16, 0)
	if v4only[0].Source != "203.0.0.0/16" || v4only[3].Source != "2001:db8:1:2::1" || lines[0].Source != "203.0.113.7" {
		t.Errorf("--prefix 16 alone: %+v; input %+v", v4only, lines[0])
	}
	for _, c := range []struct {
		bits, max int
		ok        bool
	}{{0, 32, true}, {32, 32, true}, {33, 32, false}, {-1, 128, false}, {128, 128, true}} {
		if err := api.CheckPrefixLen("--prefix", c.bits, c.max); (err == nil) != c.ok {
			t.Errorf("CheckPrefixLen(%d, %d): %v", c.bits, c.max, err)
		}
	}
}
