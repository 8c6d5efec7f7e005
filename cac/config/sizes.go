package config

import (
	"fmt"

	"github.com/xdpcac/xdpcac/cac/bucket"
	"go.yaml.in/yaml/v3"
)

// The capacities of the fast path's tables (bpf/shared.h). A file that holds
// more is refused at validate, at the first item past the capacity, so
// that it is never called valid and then refused by apply.
const (
	MaxAccounts  = 4096 // CAC_MAX_ACCOUNTS
	MaxCustomers = 1024 // CAC_MAX_CUSTOMERS
	MaxAgents    = 256  // CAC_MAX_AGENTS
)

// checkSizes refuses tables the fast path cannot hold, and reports
// whether the file fits: the pairwise checks that follow it are quadratic
// in the accounts, and are not worth running on a file already refused.
func (c *Config) checkSizes(d *decoder) bool {
	fits := true
	if n := len(c.Customers); n > MaxCustomers {
		d.errorf(c.Customers[MaxCustomers].node, fmt.Sprintf("customers[%d]", MaxCustomers),
			"%d customers: the fast path holds at most %d (CAC_MAX_CUSTOMERS)", n, MaxCustomers)
		fits = false
	}
	accounts := 0
	for _, cu := range c.Customers {
		accounts += len(cu.Accounts)
	}
	if accounts > MaxAccounts {
		i, j := nthAccount(c.Customers, MaxAccounts)
		d.errorf(c.Customers[i].Accounts[j].node, fmt.Sprintf("customers[%d].accounts[%d]", i, j),
			"%d accounts: the fast path holds at most %d (CAC_MAX_ACCOUNTS); this is the first past them", accounts, MaxAccounts)
		fits = false
	}
	if n := len(c.SessionAgents); n > MaxAgents {
		d.errorf(c.SessionAgents[MaxAgents].node, fmt.Sprintf("session-agents[%d]", MaxAgents),
			"%d session agents: the fast path holds at most %d (CAC_MAX_AGENTS)", n, MaxAgents)
		fits = false
	}
	return fits
}

// nthAccount is where the account of index n (from 0, across customers)
// is: its customer and its place there.
func nthAccount(customers []Customer, n int) (int, int) {
	for i, cu := range customers {
		if n < len(cu.Accounts) {
			return i, n
		}
		n -= len(cu.Accounts)
	}
	return -1, -1
}

// checkRate refuses a bucket the fast path cannot represent (a rate too
// fast for one nanosecond a call, a burst past its tolerance), the same
// check apply makes, here with the file's line.
func (d *decoder) checkRate(n *yaml.Node, path string, l Limit) {
	if l.CPS == nil || l.EffectiveBurst() < 1 {
		return // checkLimit says why
	}
	if _, err := bucket.FromRate(*l.CPS, l.EffectiveBurst()); err != nil {
		d.errorf(n, path, "%v: the fast path cannot hold this bucket", err)
	}
}
