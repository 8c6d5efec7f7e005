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
