package policy

import "fmt"

// Index is where an account prefix keeps its buckets: the account's index
// and its customer's (struct cac_account).
type Index struct {
	Account  uint32
	Customer uint32
}

// Indexes are the bucket indexes of a policy's accounts and customers, in
// policy order, and those that start with full buckets.
type Indexes struct {
	Accounts       []uint32
	Customers      []uint32
	FreshAccounts  []uint32
	FreshCustomers []uint32
}

// AssignIndexes gives each account and customer of p the bucket it keeps
// across a change of policy. old maps the (mapped) account prefixes in
// force, and their cli and called rules, to their indexes. An account
// keeps its index while its rule stays; a customer takes the index of the
// first of its accounts whose rule stays, since the fast path knows
// customers only by their accounts' rules. Everything else gets an index
// that the policy in force does not use, so that resetting its bucket
// disturbs nothing in flight.
func AssignIndexes(p Policy, old map[Rule]Index) (Indexes, error) {
	usedA, usedC := map[uint32]bool{}, map[uint32]bool{}
	for _, v := range old {
		usedA[v.Account], usedC[v.Customer] = true, true
	}
	takenA, takenC := map[uint32]bool{}, map[uint32]bool{}
	ix := Indexes{Accounts: make([]uint32, len(p.Accounts)), Customers: make([]uint32, len(p.Customers))}
	acctSet := make([]bool, len(p.Accounts))
	custSet := make([]bool, len(p.Customers))
	for i, a := range p.Accounts {
		v, ok := old[a.Rule()]
		if !ok || takenA[v.Account] {
			continue
		}
		ix.Accounts[i], acctSet[i], takenA[v.Account] = v.Account, true, true
		if !custSet[a.Customer] && !takenC[v.Customer] {
			ix.Customers[a.Customer], custSet[a.Customer], takenC[v.Customer] = v.Customer, true, true
		}
	}
	free := func(used, taken map[uint32]bool, max int) (uint32, error) {
		for i := uint32(0); i < uint32(max); i++ {
			if !used[i] && !taken[i] {
				taken[i] = true
				return i, nil
			}
		}
		return 0, fmt.Errorf("no free bucket index below %d: apply once without the removed accounts, or attach again", max)
	}
	var err error
	for i := range ix.Accounts {
		if !acctSet[i] {
			if ix.Accounts[i], err = free(usedA, takenA, MaxAccounts); err != nil {
				return ix, err
			}
			ix.FreshAccounts = append(ix.FreshAccounts, ix.Accounts[i])
		}
	}
	for i := range ix.Customers {
		if !custSet[i] {
			if ix.Customers[i], err = free(usedC, takenC, MaxCustomers); err != nil {
				return ix, err
			}
			ix.FreshCustomers = append(ix.FreshCustomers, ix.Customers[i])
		}
	}
	return ix, nil
}
