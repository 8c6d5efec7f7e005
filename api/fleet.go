package api

import "time"

// Fleet is what the daemon knows of the fleet it renews leases from
// (docs/design.md, "Fleet"), also `show fleet -o json`. Every key is
// there whatever the state, lists empty rather than null, so that a
// script reads one shape with or without a fleet.
type Fleet struct {
	// Configured is false without a fleet block in force: every other
	// key is then zero and every list empty.
	Configured bool   `json:"configured"`
	Name       string `json:"fleet"`
	// Member is this box's name in the fleet.
	Member string `json:"member"`
	// State is fleet (leases from Redis), unreachable (Redis failed;
	// leases run on what they hold) or lost (on-fleet-lost in force).
	State           string `json:"state"`
	OnFleetLost     string `json:"on_fleet_lost"`
	LostAfterMS     int64  `json:"lost_after_ms"`
	LeaseLifetimeMS int64  `json:"lease_lifetime_ms"`
	LeaseRenewMS    int64  `json:"lease_renew_ms"`
	// LastRenewal is when Redis last answered a renewal, on this box's
	// clock; LastRenewalAgeMS is its age when the view was taken. Both
	// are null until Redis has answered one.
	LastRenewal      *time.Time `json:"last_renewal"`
	LastRenewalAgeMS *int64     `json:"last_renewal_age_ms"`
	// RedisRTTUS is the round trip of the last renewal Redis answered,
	// in microseconds: a local Redis answers well under a millisecond.
	RedisRTTUS int64 `json:"redis_rtt_us"`
	// LastError is why the last renewal failed; "" when it succeeded.
	LastError string `json:"last_error"`
	// RenewalsAnswered and RenewalsFailed count the requests to Redis
	// since the fleet block was put in force, by how they ended.
	RenewalsAnswered uint64 `json:"renewals_answered"`
	RenewalsFailed   uint64 `json:"renewals_failed"`
	// Master is the master the Sentinels name now, asked every second;
	// "" without Sentinels. Failovers counts the times it changed since
	// the fleet block was put in force.
	Master    string `json:"master"`
	Failovers uint64 `json:"failovers"`
	// Members is the number of boxes the last grant counted, this one
	// included: the divisor of on-fleet-lost local.
	Members int `json:"members"`
	// MembersSeen are the boxes Redis held a recent renewal of at its
	// last answer, newest first (the daemon asks every second); empty
	// before any. MembersError says why the last question failed.
	MembersSeen  []FleetMember `json:"members_seen"`
	MembersError string        `json:"members_error"`
	Limits       []FleetLimit  `json:"limits"`
}

// FleetMember is a box of the fleet as Redis last saw it.
type FleetMember struct {
	Box string `json:"box"`
	// LastRenewal is on Redis's clock; LastRenewalAgeMS is against this
	// box's, so a skew between the two shows in it.
	LastRenewal      time.Time `json:"last_renewal"`
	LastRenewalAgeMS int64     `json:"last_renewal_age_ms"`
}

// FleetLimit is one fleet-scope limit and this box's lease of it.
type FleetLimit struct {
	Name  string  `json:"name"`
	CPS   float64 `json:"cps"`
	Burst float64 `json:"burst"`
	// Tokens is what the lease holds now: calls this box may admit
	// before the next grant.
	Tokens int64 `json:"tokens"`
	// Granted, Spent, Expired and Returned count tokens since the lease
	// was set up: granted by the fleet, spent by admitted calls, taken
	// back unspent after their lifetime, and of those given back to the
	// fleet.
	Granted int64 `json:"granted"`
	// GrantedLocal is the part of Granted this box granted itself while
	// the fleet was lost (on-fleet-lost local or static).
	GrantedLocal int64 `json:"granted_local"`
	Spent        int64 `json:"spent"`
	Expired      int64 `json:"expired"`
	Returned     int64 `json:"returned"`
	// DemandCPS is calls a second the level was asked to admit, spent or
	// refused for want of a token, smoothed: what the lease is sized to.
	DemandCPS float64 `json:"demand_cps"`
}

// NoFleet is the view without a fleet: every list empty, not null.
func NoFleet() Fleet {
	return Fleet{MembersSeen: []FleetMember{}, Limits: []FleetLimit{}}
}
