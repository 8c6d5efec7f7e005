package policy

import "github.com/xdpcac/xdpcac/cac/config"

// MaxLeases is CAC_MAX_LEASES of bpf/shared.h: the leases of the levels
// (classes and environment), then of customers, then of accounts, each by
// its index in the fast path.
const MaxLeases = NumLevels + MaxCustomers + MaxAccounts

// FleetLimit is a fleet-scope level of a policy: its rate is the fleet's,
// kept in Redis, and this box spends the lease its daemon holds of it
// (docs/design.md, "Fleet"). Exactly one of Level, Customer and Account
// is at least 0: a class's or the environment's level, or a customer or
// an account by its place in the policy.
type FleetLimit struct {
	// Name keys the limit in the fleet: environment, class/NAME,
	// customer/NAME or account/CUSTOMER/NAME, the same on every box.
	Name                     string
	CPS, Burst               float64
	Level, Customer, Account int
}

// Lease is the index of the lease f spends, with ix the fast-path indexes
// of the policy's accounts and customers.
func (f FleetLimit) Lease(ix Indexes) uint32 {
	switch {
	case f.Customer >= 0:
		return LeaseOfCustomer(ix.Customers[f.Customer])
	case f.Account >= 0:
		return LeaseOfAccount(ix.Accounts[f.Account])
	}
	return LeaseOfLevel(f.Level)
}

// LeaseOfLevel is the lease a fleet-scope class or environment spends;
// LeaseOfCustomer and LeaseOfAccount those of a customer and an account
// by their fast-path index.
func LeaseOfLevel(l int) uint32           { return uint32(l) }
func LeaseOfCustomer(index uint32) uint32 { return uint32(NumLevels) + index }
func LeaseOfAccount(index uint32) uint32  { return uint32(NumLevels+MaxCustomers) + index }

// fleetOf adds the fleet limit of a level whose limit is fleet-scope (a
// cps is, the configuration checked).
func (p *Policy) fleetOf(name string, l config.Limit, level, customer, account int) {
	if !l.Fleet || l.Unlimited() {
		return
	}
	p.Fleet = append(p.Fleet, FleetLimit{
		Name: name, CPS: *l.CPS, Burst: l.EffectiveBurst(),
		Level: level, Customer: customer, Account: account,
	})
}
