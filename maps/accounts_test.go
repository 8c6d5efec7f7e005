package maps

import (
	"net/netip"
	"testing"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestReadAccountTokens: every account WritePolicy puts in force reads
// back with its own bucket and its customer's, full, and an account or
// customer without a rate reads as not limited.
func TestReadAccountTokens(t *testing.T) {
	testenv.RequireBPF(t)
	var objs bpf.XdpObjects
	if err := bpf.LoadXdpObjects(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	lim := func(cps, burst float64) bucket.Limit {
		l, err := bucket.FromRate(cps, burst)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	hq, lab, v6 := netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::/32")
	p := policy.Policy{
		Customers: []bucket.Limit{lim(10, 40), bucket.Unlimited},
		Accounts: []policy.Account{
			{Prefix: hq, Limit: lim(5, 10), Customer: 0},
			{Prefix: lab, Limit: bucket.Unlimited, Customer: 0},
			{Prefix: v6, Limit: lim(1, 3), Customer: 1},
			{Kind: policy.RuleCalled, User: "0800", Limit: lim(2, 7), Customer: 1},
		},
	}
	pm := PolicyMapsOf(&objs.XdpMaps)
	if err := WritePolicy(pm, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAccountTokens(pm, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	byPrefix := map[netip.Prefix]AccountTokens{}
	var called []AccountTokens
	for _, a := range got {
		if a.Rule.Kind != policy.RuleSource {
			called = append(called, a)
			continue
		}
		byPrefix[a.Prefix] = a
	}
	if len(byPrefix) != 3 {
		t.Fatalf("%d source accounts read, want 3: %+v", len(byPrefix), got)
	}
	if len(called) != 1 || called[0].Rule != (policy.Rule{Kind: policy.RuleCalled, User: "0800"}) || called[0].Burst != 7 || called[0].CustomerLimited {
		t.Errorf("called accounts read: %+v, want called 0800 with a burst of 7", called)
	}
	for _, c := range []struct {
		prefix               netip.Prefix
		limited, custLimited bool
		burst, customerBurst float64
	}{
		{hq, true, true, 10, 40},
		{lab, false, true, 0, 40},
		{v6, true, false, 3, 0},
	} {
		a := byPrefix[policy.Mapped(c.prefix)]
		if a.Limited != c.limited || a.CustomerLimited != c.custLimited || a.Burst != c.burst || a.Tokens != c.burst ||
			a.CustomerBurst != c.customerBurst || a.CustomerTokens != c.customerBurst {
			t.Errorf("%s: %+v, want limited %v/%v, full buckets of %v and %v", c.prefix, a, c.limited, c.custLimited, c.burst, c.customerBurst)
		}
	}
	if byPrefix[policy.Mapped(hq)].Customer != byPrefix[policy.Mapped(lab)].Customer {
		t.Error("two accounts of one customer read different customer buckets")
	}
}
