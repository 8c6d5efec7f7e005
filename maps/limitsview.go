package maps

import (
	"cmp"
	"math"
	"net/netip"
	"slices"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// LimitView is one bucket in force, as `show limits -o json` prints it:
// calls a second and the burst; both 0 for no limit.
//
// Fleet is a fleet-scope level (docs/design.md, "Fleet"): its rate is the
// fleet's, kept in Redis and not in the fast path (show fleet has it), so
// CPS and Burst are 0.
type LimitView struct {
	CPS   float64 `json:"cps"`
	Burst float64 `json:"burst"`
	Fleet bool    `json:"fleet"`
}

// LimitsView is every limit in force, per level (docs/design.md,
// "Admission"), as the fast path holds it: what the last apply wrote.
type LimitsView struct {
	Classes     map[string]ClassLimitsView `json:"classes"`
	Environment SharedLimitView            `json:"environment"`
	Accounts    []AccountLimitView         `json:"accounts"`
	Agents      []AgentLimitView           `json:"agents"`
}

// SharedLimitView is a class's or the environment's bucket, with the
// calls of it kept for session agents.
type SharedLimitView struct {
	LimitView
	AgentReserve float64 `json:"agent_reserve"`
}

// ClassLimitsView is a class's limits: its own bucket and each source's.
type ClassLimitsView struct {
	SharedLimitView
	Limited   bool            `json:"limited"` // some level holds the class
	PerSource PerSourceLimits `json:"per_source"`
}

// PerSourceLimits is the automatic bucket of every source of a class.
type PerSourceLimits struct {
	LimitView
	Key        string `json:"key"`         // ip, mac, mac-vlan or vlan
	IPv6Prefix int    `json:"ipv6_prefix"` // what an IPv6 source is cut to
}

// AccountLimitView is an account's prefix, its bucket and its customer's.
type AccountLimitView struct {
	Prefix string `json:"prefix"` // empty for a cli or called account
	// CLI and Called: the prefix of a cli or called account
	// (docs/design.md, "Authentication rules").
	CLI      string    `json:"cli"`
	Called   string    `json:"called"`
	Limit    LimitView `json:"limit"`
	Customer LimitView `json:"customer"`
	// Sessions and CustomerSessions: the account's and its customer's
	// max-sessions and the dialogs that hold them (docs/design.md,
	// "Capacity").
	Sessions         SessionsView `json:"sessions"`
	CustomerSessions SessionsView `json:"customer_sessions"`
}

// SessionsView is a limit of concurrent sessions, max-sessions (0 for
// none), and how many its dialogs hold.
type SessionsView struct {
	Max  uint32 `json:"max"`
	Held uint64 `json:"held"`
}

// AgentLimitView is a session agent's own bucket, by its index in the
// file's session-agents.
type AgentLimitView struct {
	Index int `json:"index"`
	// Name is the agent's name in the file the running daemon has in
	// force; "" without a daemon, whose file alone names them.
	Name  string    `json:"name"`
	Limit LimitView `json:"limit"`
	// Connection is its connection limit at egress, and FailFast whether
	// an INVITE toward it out of service is refused there
	// (docs/design.md, "Egress admission").
	Connection LimitView `json:"connection"`
	FailFast   bool      `json:"fail_fast"`
	// Sessions: its max-sessions and the dialogs toward it that hold one.
	Sessions SessionsView `json:"sessions"`
}

// limitView turns a GCRA limit back into calls a second and a burst.
func limitView(l bpf.XdpCacLimit) LimitView {
	if l.IntervalNs == 0 {
		return LimitView{}
	}
	if l.IntervalNs == LeaseInterval {
		return LimitView{Fleet: true}
	}
	round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
	return LimitView{CPS: round(1e9 / float64(l.IntervalNs)), Burst: round(float64(l.ToleranceNs)/float64(l.IntervalNs) + 1)}
}

// reserveCalls is a reserve in calls of a limit's interval.
func reserveCalls(reserveNS uint64, l bpf.XdpCacLimit) float64 {
	if l.IntervalNs == 0 || l.IntervalNs == LeaseInterval {
		return 0
	}
	return math.Round(float64(reserveNS)/float64(l.IntervalNs)*1000) / 1000
}

// LimitsViewOf is the view of what in holds. Every key is there whatever
// the state: empty lists, zero limits.
func LimitsViewOf(in InForce) LimitsView {
	v := LimitsView{Classes: map[string]ClassLimitsView{}, Accounts: []AccountLimitView{}, Agents: []AgentLimitView{}}
	for _, c := range cac.Classes() {
		cl := in.Limits.Classes[c]
		v.Classes[c.String()] = ClassLimitsView{
			SharedLimitView: SharedLimitView{limitView(in.Limits.Level[c]), reserveCalls(in.Limits.ReserveNs[c], in.Limits.Level[c])},
			Limited:         in.Word&policyLimited(c) != 0,
			PerSource:       PerSourceLimits{LimitView: limitView(cl.PerSource), Key: policy.SourceKey(cl.SourceKey).String(), IPv6Prefix: int(cl.Ipv6Prefix)},
		}
	}
	env := in.Limits.Level[policy.LevelEnvironment]
	v.Environment = SharedLimitView{limitView(env), reserveCalls(in.Limits.ReserveNs[policy.LevelEnvironment], env)}
	prefixes := make([]netip.Prefix, 0, len(in.Accounts))
	for p := range in.Accounts {
		prefixes = append(prefixes, p)
	}
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Bits(), b.Bits())
	})
	for _, p := range prefixes {
		a := in.Accounts[p]
		v.Accounts = append(v.Accounts, AccountLimitView{Prefix: unmapped(p).String(), Limit: limitView(a.Limit), Customer: limitView(a.Customer),
			Sessions: SessionsView(a.Sessions), CustomerSessions: SessionsView(a.CustomerSess)})
	}
	rules := make([]policy.Rule, 0, len(in.UserAccounts))
	for r := range in.UserAccounts {
		rules = append(rules, r)
	}
	slices.SortFunc(rules, func(a, b policy.Rule) int {
		if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return cmp.Compare(a.User, b.User)
	})
	for _, r := range rules {
		a := in.UserAccounts[r]
		av := AccountLimitView{Limit: limitView(a.Limit), Customer: limitView(a.Customer),
			Sessions: SessionsView(a.Sessions), CustomerSessions: SessionsView(a.CustomerSess)}
		if r.Kind == policy.RuleCLI {
			av.CLI = r.User
		} else {
			av.Called = r.User
		}
		v.Accounts = append(v.Accounts, av)
	}
	for i, a := range in.Agents {
		av := AgentLimitView{Index: i, Limit: limitView(a.Limit)}
		if i < len(in.AgentEgress) {
			e := in.AgentEgress[i]
			av.Connection = limitView(e.Connection)
			av.FailFast = e.Flags&uint32(bpf.XdpCacAgentFlagAGENT_FAIL_FAST) != 0
		}
		if i < len(in.AgentSessions) {
			av.Sessions = SessionsView(in.AgentSessions[i])
		}
		v.Agents = append(v.Agents, av)
	}
	return v
}

// unmapped is an IPv4 prefix the table keys as IPv4-mapped IPv6 in the
// form the file wrote it.
func unmapped(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}
