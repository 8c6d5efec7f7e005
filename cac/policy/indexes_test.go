package policy

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/xdpcac/xdpcac/cac/bucket"
)

func TestAssignIndexes(t *testing.T) {
	l, _ := bucket.FromRate(1, 5)
	pa, pb, pc := netip.MustParsePrefix("192.0.2.0/28"), netip.MustParsePrefix("192.0.2.16/28"), netip.MustParsePrefix("2001:db8::/48")
	first := Policy{
		Customers: []bucket.Limit{l},
		Accounts:  []Account{{Prefix: pa, Limit: l}, {Prefix: pb, Limit: l}},
	}
	ix, err := AssignIndexes(first, nil)
	if err != nil || !slices.Equal(ix.Accounts, []uint32{0, 1}) || !slices.Equal(ix.FreshAccounts, []uint32{0, 1}) || !slices.Equal(ix.FreshCustomers, []uint32{0}) {
		t.Fatalf("first policy: %+v, %v", ix, err)
	}
	old := map[Rule]Index{{Prefix: Mapped(pa)}: {0, 0}, {Prefix: Mapped(pb)}: {1, 0}}

	// pb moves first and a new account joins: kept prefixes keep their
	// indexes, the new one gets one the policy in force does not use.
	second := Policy{
		Customers: []bucket.Limit{l, l},
		Accounts:  []Account{{Prefix: pb, Limit: l}, {Prefix: pc, Limit: l, Customer: 1}, {Prefix: pa, Limit: l}},
	}
	ix, err = AssignIndexes(second, old)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ix.Accounts, []uint32{1, 2, 0}) || !slices.Equal(ix.FreshAccounts, []uint32{2}) {
		t.Errorf("accounts %v fresh %v, want [1 2 0] fresh [2]", ix.Accounts, ix.FreshAccounts)
	}
	if !slices.Equal(ix.Customers, []uint32{0, 1}) || !slices.Equal(ix.FreshCustomers, []uint32{1}) {
		t.Errorf("customers %v fresh %v, want [0 1] fresh [1]", ix.Customers, ix.FreshCustomers)
	}
}

func TestMapped(t *testing.T) {
	if got := Mapped(netip.MustParsePrefix("10.0.0.0/8")); got.String() != "::ffff:10.0.0.0/104" {
		t.Errorf("Mapped(10.0.0.0/8) = %v", got)
	}
	if got := Mapped(netip.MustParsePrefix("2001:db8::/32")); got.String() != "2001:db8::/32" {
		t.Errorf("Mapped(2001:db8::/32) = %v", got)
	}
}

// TestAssignIndexesRules: a cli or called account keeps its index while
// its rule (kind and prefix) stays, as a source account does; the same
// prefix as the other kind is another rule.
func TestAssignIndexesRules(t *testing.T) {
	l, _ := bucket.FromRate(1, 5)
	first := Policy{
		Customers: []bucket.Limit{l},
		Accounts:  []Account{{Kind: RuleCLI, User: "44", Limit: l}, {Kind: RuleCalled, User: "0800", Limit: l}},
	}
	ix, err := AssignIndexes(first, nil)
	if err != nil || !slices.Equal(ix.Accounts, []uint32{0, 1}) {
		t.Fatalf("first policy: %+v, %v", ix, err)
	}
	old := map[Rule]Index{first.Accounts[0].Rule(): {0, 0}, first.Accounts[1].Rule(): {1, 0}}
	second := Policy{
		Customers: []bucket.Limit{l},
		Accounts:  []Account{{Kind: RuleCalled, User: "44", Limit: l}, {Kind: RuleCalled, User: "0800", Limit: l}, {Kind: RuleCLI, User: "44", Limit: l}},
	}
	ix, err = AssignIndexes(second, old)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ix.Accounts, []uint32{2, 1, 0}) || !slices.Equal(ix.FreshAccounts, []uint32{2}) {
		t.Errorf("accounts %v fresh %v, want [2 1 0] fresh [2]", ix.Accounts, ix.FreshAccounts)
	}
}
