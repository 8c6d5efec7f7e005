package policy

import "github.com/xdpcac/xdpcac/cac/config"

// MaxLeases is CAC_MAX_LEASES of bpf/shared.h: the leases of the levels
// (classes and environment), then of customers, then of accounts, each by
// its index in the fast path.
const MaxLeases = NumLevels + MaxCustomers + MaxAccounts + 1

// LeaseCallAdmission is CAC_LEASE_CALL_ADMISSION: the lease of a
// fleet-scope call admission limit, in charge units times ticks held.
const LeaseCallAdmission = uint32(MaxLeases - 1)

// FleetLimit is a fleet-scope level of a policy: its rate is the fleet's,
// kept in Redis, and this box spends the lease its daemon holds of it
// (docs/design.md, "Fleet"). Exactly one of Level, Customer and Account
// is at least 0 (a class's or the environment's level, or a customer or
// an account by its place in the policy), or none and CallAdmission is
// set: the call admission limit, whose tokens are charge units for a tick
// (CPS is the limit times ten ticks a second, Burst the limit for the
// longest lifetime).
type FleetLimit struct {
	// Name keys the limit in the fleet: environment, class/NAME,
	// customer/NAME or account/CUSTOMER/NAME, the same on every box.
	Name                     string
	CPS, Burst               float64
	Level, Customer, Account int
	CallAdmission            bool
}

// Lease is the index of the lease f spends, with ix the fast-path indexes
// of the policy's accounts and customers.
func (f FleetLimit) Lease(ix Indexes) uint32 {
	switch {
	case f.CallAdmission:
		return LeaseCallAdmission
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

// fleetOfCallAdmission adds the fleet limit of a fleet-scope call
// admission limit: L charge units held at once is L × 10 unit-ticks a
// second, and at most L for the longest lifetime at once.
func (p *Policy) fleetOfCallAdmission() {
	ca := p.CallAdmission
	if !ca.Fleet {
		return
	}
	var longest uint32
	for _, ch := range ca.Charges {
		if ch.Charge != 0 {
			longest = max(longest, ch.LifetimeTicks)
		}
	}
	units := float64(ca.LimitMilli) / 1000
	p.Fleet = append(p.Fleet, FleetLimit{
		Name: "call-admission", CPS: units * 1e9 / TickNS, Burst: max(1, units*float64(max(longest, 1))),
		Level: -1, Customer: -1, Account: -1, CallAdmission: true,
	})
}
