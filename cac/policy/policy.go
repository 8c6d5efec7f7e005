package policy

import (
	"fmt"
	"math"
	"net/netip"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/config"
)

// Bucket levels that have one bucket each, as enum cac_level indexes them:
// one per class, then the environment.
const (
	LevelEnvironment = cac.NumClasses
	NumLevels        = cac.NumClasses + 1
)

// Capacity of the account and customer tables (CAC_MAX_ACCOUNTS and
// CAC_MAX_CUSTOMERS in bpf/shared.h); config refuses a file past them, with
// its line, before anything gets here.
const (
	MaxAccounts  = config.MaxAccounts
	MaxCustomers = config.MaxCustomers
)

// SourceKey says how the per-source bucket of a class tells sources apart:
// enum cac_source_key.
type SourceKey uint8

// The source keys.
const (
	SourceIP SourceKey = iota
	SourceMAC
	SourceMACVLAN
	SourceVLAN
)

// PerSource is the automatic bucket each source of a class gets.
type PerSource struct {
	Limit      bucket.Limit // unlimited: no per-source bucket
	Key        SourceKey
	IPv6Prefix int
}

// RuleKind is how an account is identified: enum cac_user_rule, in the
// order of precedence after the source (docs/design.md, "Authentication
// rules"): a CLI rule first, then a called-number rule, then a source prefix.
type RuleKind uint8

// The rule kinds.
const (
	RuleSource RuleKind = iota
	RuleCLI
	RuleCalled
)

// UserMax is CAC_USER_MAX: the bytes of a user the fast path compares.
const UserMax = config.UserMax

func (k RuleKind) String() string {
	switch k {
	case RuleCLI:
		return "cli"
	case RuleCalled:
		return "called"
	}
	return "source"
}

// Account is a bucket of its own inside a customer, for the requests of
// a source prefix (Kind RuleSource) or of a CLI or called-number prefix
// (User).
type Account struct {
	Kind     RuleKind
	Prefix   netip.Prefix // a source account's
	User     string       // a cli or called account's
	Limit    bucket.Limit
	Customer int // index into Policy.Customers
	// MaxSessions is how many dialogs the account holds at once; 0 is
	// no limit (docs/design.md, "Capacity").
	MaxSessions uint32
}

// Rule is what identifies an account, as the fast path's tries key it: a
// mapped source prefix, or a rule kind and a user prefix.
type Rule struct {
	Kind   RuleKind
	Prefix netip.Prefix
	User   string
}

// Rule is a's rule.
func (a Account) Rule() Rule {
	if a.Kind == RuleSource {
		return Rule{Prefix: Mapped(a.Prefix)}
	}
	return Rule{Kind: a.Kind, User: a.User}
}

func (r Rule) String() string {
	if r.Kind == RuleSource {
		return r.Prefix.String()
	}
	return r.Kind.String() + " " + r.User
}

// SourceAccounts is how many accounts of p are source prefixes: the
// fast path's count of them, without which it looks no source up.
func (p Policy) SourceAccounts() int {
	n := 0
	for _, a := range p.Accounts {
		if a.Kind == RuleSource {
			n++
		}
	}
	return n
}

// UserRules reports whether some account of p is a cli or called one:
// the fast path's POLICY_USER_RULES bits.
func (p Policy) UserRules() bool { return p.HasRule(RuleCLI) || p.HasRule(RuleCalled) }

// HasRule reports whether some account of p is identified by a rule of
// kind: for cli and called rules, the fast path's POLICY_CLI_RULES and
// POLICY_CALLED_RULES bits.
func (p Policy) HasRule(kind RuleKind) bool {
	for _, a := range p.Accounts {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

// Policy is every limit of the fast path.
type Policy struct {
	Levels [NumLevels]bucket.Limit
	// ReserveNS is the part of each class's and the environment's
	// tolerance a stranger's call must leave for the session agents.
	ReserveNS [NumLevels]uint64
	PerSource [cac.NumClasses]PerSource
	Accounts  []Account
	Customers []bucket.Limit
	// CustomerSessions is each customer's max-sessions, as Customers
	// is ordered; 0 is no limit.
	CustomerSessions []uint32
	// CallAdmission is the Cisco charge budget and its gates.
	CallAdmission CallAdmission
	// Agents are the session agents, in the order of the configuration:
	// their index is their place in the fast path's tables.
	Agents []Agent
	// Fleet are the fleet-scope levels, whose limits in Levels,
	// Customers and Accounts say Fleet.
	Fleet []FleetLimit
	// AccessLists says the static lists of access control hold
	// something, AutoDeny that auto-deny is on: the fast path's
	// POLICY_ACCESS_LISTS and POLICY_AUTO_DENY bits, without which it
	// never reads those maps (docs/design.md, "Access control"). The
	// loader sets them from the lists and settings it writes first.
	AccessLists, AutoDeny bool
}

// Agent is a session agent as the fast path holds it: its own bucket, the
// response codes that take it out of service, and at egress its
// connection limit and whether an INVITE toward it out of service is
// refused at once (docs/design.md, "Egress admission").
type Agent struct {
	Limit      bucket.Limit
	OutCodes   []int
	Connection bucket.Limit
	FailFast   bool
	// MaxSessions is how many dialogs the server may have up toward the
	// agent at once (docs/design.md, "Capacity"); 0 is no limit.
	MaxSessions uint32
}

// MaxAgents is CAC_MAX_AGENTS of bpf/shared.h.
const MaxAgents = config.MaxAgents

func limitOf(what string, lim config.Limit) (bucket.Limit, error) {
	if lim.Unlimited() {
		return bucket.Unlimited, nil
	}
	b, err := bucket.FromRate(*lim.CPS, lim.EffectiveBurst())
	if err != nil {
		return b, fmt.Errorf("%s: %w", what, err)
	}
	b.Fleet = lim.Fleet
	return b, nil
}

var sourceKeys = map[string]SourceKey{"ip": SourceIP, "mac": SourceMAC, "mac-vlan": SourceMACVLAN, "vlan": SourceVLAN}

// String is the key as the configuration spells it; "ip" is the default,
// the zero key.
func (k SourceKey) String() string {
	for name, key := range sourceKeys {
		if key == k {
			return name
		}
	}
	return "ip"
}

// Of converts the limits of a config.
func Of(cfg *config.Config) (Policy, error) {
	var p Policy
	var err error
	for c, cl := range cfg.Classes {
		if p.Levels[c], err = limitOf("classes."+c.String(), cl.Limit); err != nil {
			return p, err
		}
		p.fleetOf("class/"+c.String(), cl.Limit, int(c), -1, -1)
		if !c.Sessionless() { // no agent's to reserve
			p.ReserveNS[c] = reserveOf(cl.Limit, cl.AgentReserve, len(cfg.SessionAgents) > 0)
		}
		if ps := cl.PerSource; ps != nil {
			ps2 := PerSource{Key: sourceKeys[ps.Key], IPv6Prefix: ps.IPv6Prefix}
			if ps2.Limit, err = limitOf("classes."+c.String()+".per-source", ps.Limit); err != nil {
				return p, err
			}
			p.PerSource[c] = ps2
		}
	}
	if p.Levels[LevelEnvironment], err = limitOf("environment", cfg.Environment); err != nil {
		return p, err
	}
	p.fleetOf("environment", cfg.Environment, LevelEnvironment, -1, -1)
	p.ReserveNS[LevelEnvironment] = reserveOf(cfg.Environment, cfg.EnvironmentAgentReserve, len(cfg.SessionAgents) > 0)
	for _, cu := range cfg.Customers {
		l, err := limitOf("customer "+cu.Name, cu.Limit)
		if err != nil {
			return p, err
		}
		p.fleetOf("customer/"+cu.Name, cu.Limit, -1, len(p.Customers), -1)
		p.Customers = append(p.Customers, l)
		p.CustomerSessions = append(p.CustomerSessions, cu.MaxSessions)
		for _, a := range cu.Accounts {
			al, err := limitOf("account "+a.Name, a.Limit)
			if err != nil {
				return p, err
			}
			p.fleetOf("account/"+cu.Name+"/"+a.Name, a.Limit, -1, -1, len(p.Accounts))
			acct := Account{Prefix: a.Source, Limit: al, Customer: len(p.Customers) - 1, MaxSessions: a.MaxSessions}
			switch {
			case a.CLI != "":
				acct.Kind, acct.User, acct.Prefix = RuleCLI, a.CLI, netip.Prefix{}
			case a.Called != "":
				acct.Kind, acct.User, acct.Prefix = RuleCalled, a.Called, netip.Prefix{}
			}
			p.Accounts = append(p.Accounts, acct)
		}
	}
	if p.CallAdmission, err = callAdmissionOf(cfg); err != nil {
		return p, err
	}
	p.fleetOfCallAdmission()
	for _, a := range cfg.SessionAgents {
		l, err := limitOf("session agent "+a.Name, a.Limit)
		if err != nil {
			return p, err
		}
		c, err := limitOf("session agent "+a.Name+" connection", a.Connection)
		if err != nil {
			return p, err
		}
		p.Agents = append(p.Agents, Agent{
			Limit: l, OutCodes: a.OutServiceResponseCodes,
			Connection: c, FailFast: a.OnOutOfService == config.OnOutOfServiceFailFast,
			MaxSessions: a.MaxSessions,
		})
	}
	if len(p.Agents) > MaxAgents {
		return p, fmt.Errorf("%d session agents: at most %d", len(p.Agents), MaxAgents)
	}
	if len(p.Accounts) > MaxAccounts || len(p.Customers) > MaxCustomers {
		return p, fmt.Errorf("%d accounts in %d customers: at most %d and %d", len(p.Accounts), len(p.Customers), MaxAccounts, MaxCustomers)
	}
	return p, nil
}

// reserveOf is the reserve of a shared level in nanoseconds of its
// tolerance: agent-reserve calls, or by default a tenth of the burst
// (rounded down) when there are session agents to reserve it for.
func reserveOf(lim config.Limit, set *float64, agents bool) uint64 {
	if lim.Unlimited() {
		return 0
	}
	calls := 0.0
	switch {
	case set != nil:
		calls = *set
	case agents:
		calls = config.DefaultAgentReserve(lim.EffectiveBurst())
	}
	return uint64(math.Round(calls * 1e9 / *lim.CPS))
}

// Mapped is a prefix as the account trie keys it: IPv4 mapped into IPv6
// (::ffff:a.b.c.d/96+bits), IPv6 as it is.
func Mapped(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4() {
		return netip.PrefixFrom(netip.AddrFrom16(p.Addr().As16()), p.Bits()+96)
	}
	return p
}

// Limits reports whether some level of p limits class c, call admission
// included: the fast path's POLICY_LIMITED bit of c, without which its
// frames ask no limit at all.
func (p Policy) Limits(c cac.Class) bool {
	ipClass := c != cac.PPPoEPADI && c != cac.PPPoEPADR  // source accounts are IP prefixes
	userClass := c >= cac.SIPInvite && c <= cac.SIPOther // cli and called rules read SIP requests
	_, call := cac.CallTypeOf(c)
	// In-dialog requests and malformed frames have their own two levels
	// only (accounts only skip their per-source bucket).
	shared := !c.Sessionless() && (p.Levels[LevelEnvironment] != bucket.Unlimited ||
		(ipClass && p.SourceAccounts() > 0) || (userClass && p.UserRules()) || (call && p.CallAdmission.Operational()))
	return p.Levels[c] != bucket.Unlimited || p.PerSource[c].Limit != bucket.Unlimited || shared
}

// Capacity reports whether some account, customer or session agent of p
// has max-sessions: the fast path's POLICY_CAPACITY bit.
func (p Policy) Capacity() bool {
	for _, a := range p.Accounts {
		if a.MaxSessions > 0 {
			return true
		}
	}
	for _, n := range p.CustomerSessions {
		if n > 0 {
			return true
		}
	}
	for _, a := range p.Agents {
		if a.MaxSessions > 0 {
			return true
		}
	}
	return false
}
