package api

import (
	"strings"
	"testing"
)

// TestDenyTarget: clear denied's ADDR, PREFIX, MAC and all match the
// sources show denied names, and anything else is refused with what was
// expected.
func TestDenyTarget(t *testing.T) {
	for _, c := range []struct {
		target string
		match  []string
		miss   []string
	}{
		{"all", []string{"203.0.113.7", "2001:db8::/64", "02:00:5e:10:00:01"}, nil},
		{"203.0.113.7", []string{"203.0.113.7"}, []string{"203.0.113.8", "2001:db8::/64", "02:00:5e:10:00:01"}},
		{"::ffff:203.0.113.7", []string{"203.0.113.7"}, []string{"203.0.113.8"}},
		{"203.0.113.0/24", []string{"203.0.113.7", "203.0.113.255"}, []string{"198.51.100.7", "2001:db8::/64"}},
		{"2001:db8:0:1::5", []string{"2001:db8:0:1::/64"}, []string{"2001:db8:0:2::/64", "203.0.113.7"}},
		{"2001:db8::/32", []string{"2001:db8:0:1::/64", "2001:db8:ff::"}, []string{"2001:db9::/64"}},
		{"02:00:5E:10:00:01", []string{"02:00:5e:10:00:01"}, []string{"02:00:5e:10:00:02", "203.0.113.7"}},
	} {
		tg, err := ParseDenyTarget(c.target)
		if err != nil {
			t.Fatalf("%s: %v", c.target, err)
		}
		for _, s := range c.match {
			if !tg.Matches(s) {
				t.Errorf("%s does not match %s", c.target, s)
			}
		}
		for _, s := range c.miss {
			if tg.Matches(s) {
				t.Errorf("%s matches %s", c.target, s)
			}
		}
	}
	for _, bad := range []string{"", "al", "203.0.113.300", "fe80::1%eth0", "2001:db8::/129"} {
		if _, err := ParseDenyTarget(bad); err == nil || !strings.Contains(err.Error(), `or "all"`) {
			t.Errorf("%q: %v, want an error that says what is expected", bad, err)
		}
	}
}
