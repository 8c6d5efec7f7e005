package maps

import (
	"fmt"
	"math"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// PolicyMaps are the maps that hold the limits of every level, in two
// slots, and the account and customer buckets that outlive an apply.
type PolicyMaps struct {
	Slot            *ebpf.Map    // policy_slot: the slot in force
	Limits          *ebpf.Map    // class, environment and per-source limits by slot
	Accounts        [2]*ebpf.Map // LPM tries by slot: source prefix → account, customer
	UserAccounts    [2]*ebpf.Map // LPM tries by slot: cli or called prefix → account, customer
	UserScratch     *ebpf.Map    // per CPU: the rule found for the request being judged
	AccountLimits   *ebpf.Map
	AccountBuckets  *ebpf.Map
	CustomerLimits  *ebpf.Map
	CustomerBuckets *ebpf.Map
	AgentLimits     *ebpf.Map // by slot, like the limits
	AgentEgress     *ebpf.Map // by slot, like the limits
	SessionLimits   *ebpf.Map // by slot: max-sessions of accounts, customers, agents
	// SessionsTaken and SessionsFreed count the sessions each limit's
	// dialogs took and gave back; an apply keeps them.
	SessionsTaken, SessionsFreed *ebpf.Map
}

// PolicyMapsOf picks the policy maps out of the program's maps.
func PolicyMapsOf(o *bpf.XdpMaps) PolicyMaps {
	return PolicyMaps{
		Slot: o.PolicySlot, Limits: o.Limits, Accounts: [2]*ebpf.Map{o.Accounts0, o.Accounts1},
		UserAccounts: [2]*ebpf.Map{o.UserAccounts0, o.UserAccounts1}, UserScratch: o.UserScratch,
		AccountLimits: o.AccountLimits, AccountBuckets: o.AccountBuckets,
		CustomerLimits: o.CustomerLimits, CustomerBuckets: o.CustomerBuckets,
		AgentLimits: o.AgentLimits, AgentEgress: o.AgentEgress, SessionLimits: o.SessionLimits,
		SessionsTaken: o.SessionsTaken, SessionsFreed: o.SessionsFreed,
	}
}

// Settle is how long a writer leaves between two switches of the policy
// slot, so that no program still reads the slot the next write fills. A
// program runs for microseconds with preemption off; this is ample. A
// PolicyWriter waits it out itself.
const Settle = 50 * time.Millisecond

// A PolicyWriter puts policies in force on one set of policy maps, its
// writes at least Settle apart: each waits out what remains of Settle
// since the writer's last switch before it fills the slot that switch
// left. Its first write cannot know when the slot last switched (another
// writer, or another process: cacctl apply and the daemon take turns under
// the state directory's lock, loader.Apply), so it waits all of Settle.
// Writers of the same maps must not write at once: loader.Apply holds the
// lock, a test writes from one goroutine.
type PolicyWriter struct {
	pm    PolicyMaps
	now   func() time.Time
	sleep func(time.Duration)
	last  time.Time // this writer's last switch; zero before its first
}

// NewPolicyWriter is a writer of pm on the wall clock.
func NewPolicyWriter(pm PolicyMaps) *PolicyWriter {
	return &PolicyWriter{pm: pm, now: time.Now, sleep: time.Sleep}
}

// settle waits out what remains of Settle since the writer's last switch,
// all of it before its first.
func (w *PolicyWriter) settle() {
	wait := Settle
	if !w.last.IsZero() {
		wait -= w.now().Sub(w.last)
	}
	if wait > 0 {
		w.sleep(wait)
	}
}

// Write puts p in force as WritePolicy does, once Settle has passed since
// the writer's last switch.
func (w *PolicyWriter) Write(p policy.Policy) error {
	w.settle()
	return writePolicy(w.pm, p, func() { w.last = w.now() })
}

// WritePolicy writes p with a writer of its own: it waits all of Settle
// first. A caller that writes again and again keeps a PolicyWriter.
func WritePolicy(pm PolicyMaps, p policy.Policy) error {
	return NewPolicyWriter(pm).Write(p)
}

// writePolicy puts a policy in force without a moment where the fast path
// could see part of it: it fills the slot not in use and then switches to
// it, calling switched once it has; the slot it switched from is the next
// write's to fill, after Settle. Buckets are kept: class, environment and
// per-source ones as they are, an account's while its rule stays, and a
// customer's while the rule of one of its accounts stays. New accounts
// and customers start full.
func writePolicy(pm PolicyMaps, p policy.Policy, switched func()) error {
	var active uint32
	if err := pm.Slot.Lookup(uint32(0), &active); err != nil {
		return fmt.Errorf("read policy slot: %w", err)
	}
	active = wordSlot(active) // the other bits say which classes are limited
	next := 1 - active

	// Accounts and customers keep their indexes, and so their buckets,
	// by the rules of the slot in force (rules.go).
	old, err := readRules(pm, active)
	if err != nil {
		return err
	}
	idx, err := policy.AssignIndexes(p, old)
	if err != nil {
		return err
	}

	// Fill the slot not in use: the rules, then the limits.
	if err := writeRules(pm, next, p.Accounts, idx); err != nil {
		return err
	}
	if err := writeLimits(pm, next, p, idx); err != nil {
		return err
	}
	if err := resetFreshBuckets(pm, idx); err != nil {
		return err
	}

	if err := pm.Slot.Update(uint32(0), policyWordOf(next, p), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("switch policy slot: %w", err)
	}
	switched()
	if !p.UserRules() {
		// Without user rules nothing fills the scratch, and a reject
		// record must not name the rule of a request judged before.
		return clearUserScratch(pm.UserScratch)
	}
	return nil
}

// writeLimits fills slot with the limits of p: each account's and
// customer's at its index, each session agent's, the max-sessions, and
// last the class, environment and per-source limits with call admission.
func writeLimits(pm PolicyMaps, slot uint32, p policy.Policy, idx policy.Indexes) error {
	for i, a := range p.Accounts {
		if err := pm.AccountLimits.Update(slot*policy.MaxAccounts+idx.Accounts[i], levelLimitOf(a.Limit, policy.LeaseOfAccount(idx.Accounts[i])), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write limit of account %s: %w", a.Rule(), err)
		}
	}
	for i, l := range p.Customers {
		if err := pm.CustomerLimits.Update(slot*policy.MaxCustomers+idx.Customers[i], levelLimitOf(l, policy.LeaseOfCustomer(idx.Customers[i])), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write limit of customer %d: %w", i, err)
		}
	}
	for i, a := range p.Agents {
		if err := pm.AgentLimits.Update(slot*policy.MaxAgents+uint32(i), agentOf(a), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write limit of session agent %d: %w", i, err)
		}
	}
	if err := writeAgentEgress(pm.AgentEgress, slot, p.Agents); err != nil {
		return err
	}
	if err := writeSessionLimits(pm.SessionLimits, slot, p, idx); err != nil {
		return err
	}
	if err := pm.Limits.Update(slot, limitsOf(p), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write limits: %w", err)
	}
	return nil
}

// limitsOf is the limits map's value for p: the class and environment
// levels with their reserves, the per-source limits, call admission.
func limitsOf(p policy.Policy) *bpf.XdpCacLimits {
	var v bpf.XdpCacLimits
	for i, l := range p.Levels {
		v.Level[i] = levelLimitOf(l, policy.LeaseOfLevel(i))
		v.ReserveNs[i] = min(p.ReserveNS[i], l.ToleranceNS)
	}
	for c, ps := range p.PerSource {
		v.Classes[c].PerSource = limitOf(ps.Limit)
		v.Classes[c].SourceKey = uint8(ps.Key)
		v.Classes[c].Ipv6Prefix = uint8(ps.IPv6Prefix)
	}
	v.Accounts = uint32(p.SourceAccounts())
	v.Agents = uint32(len(p.Agents))
	v.Cac = admissionOf(p.CallAdmission)
	return &v
}

func limitOf(l bucket.Limit) bpf.XdpCacLimit {
	return bpf.XdpCacLimit{IntervalNs: l.IntervalNS, ToleranceNs: l.ToleranceNS}
}

// levelLimitOf is limitOf for a level that may be fleet-scope: such a
// level's limit names the lease it spends (CAC_LEASE_INTERVAL, bpf/cac.h).
func levelLimitOf(l bucket.Limit, lease uint32) bpf.XdpCacLimit {
	if l.Fleet {
		return bpf.XdpCacLimit{IntervalNs: LeaseInterval, ToleranceNs: uint64(lease)}
	}
	return limitOf(l)
}

// LeaseInterval is CAC_LEASE_INTERVAL of bpf/cac.h: the interval of a
// fleet-scope level's limit.
const LeaseInterval = math.MaxUint64

// resetFreshBuckets fills the buckets of new accounts and customers.
// Their indexes are not used by the slot in force, so nothing else
// touches them.
func resetFreshBuckets(pm PolicyMaps, idx policy.Indexes) error {
	for _, i := range idx.FreshAccounts {
		if err := pm.AccountBuckets.Update(i, bpf.XdpCacBucket{}, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("reset bucket of account %d: %w", i, err)
		}
	}
	for _, i := range idx.FreshCustomers {
		if err := pm.CustomerBuckets.Update(i, bpf.XdpCacBucket{}, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("reset bucket of customer %d: %w", i, err)
		}
	}
	return nil
}

// policyWordOf is the word that puts slot in force with p: the classes
// limited, and whether there are agents, cli or called rules, capacity,
// access lists, auto-deny.
func policyWordOf(slot uint32, p policy.Policy) uint32 {
	word := policyWord(slot, limitedClasses(p), len(p.Agents) > 0)
	if p.HasRule(policy.RuleCLI) {
		word |= policyCLIRules
	}
	if p.HasRule(policy.RuleCalled) {
		word |= policyCalledRules
	}
	if p.Capacity() {
		word |= policyCapacity
	}
	if p.AccessLists {
		word |= policyAccessLists
	}
	if p.AutoDeny {
		word |= policyAutoDeny
	}
	return word
}

// The word of the policy_slot map, enum cac_policy of bpf/shared.h: the
// slot in force, a bit per class that some level limits, and whether any
// session agent is configured.
const (
	policySlot   = uint32(bpf.XdpCacPolicyPOLICY_SLOT)
	policyAgents = uint32(bpf.XdpCacPolicyPOLICY_AGENTS)
	// policyCLIRules and policyCalledRules: some account is a cli (or a
	// called) one, so a SIP request out of dialog is read for that user.
	policyCLIRules    = uint32(bpf.XdpCacPolicyPOLICY_CLI_RULES)
	policyCalledRules = uint32(bpf.XdpCacPolicyPOLICY_CALLED_RULES)
	// policyCapacity: some account or customer has max-sessions.
	policyCapacity = uint32(bpf.XdpCacPolicyPOLICY_CAPACITY)
	// policyAccessLists: the static lists of access control hold
	// something; policyAutoDeny: auto-deny is on (access.go).
	policyAccessLists = uint32(bpf.XdpCacPolicyPOLICY_ACCESS_LISTS)
	policyAutoDeny    = uint32(bpf.XdpCacPolicyPOLICY_AUTO_DENY)
)

// policyLimited is class c's bit, POLICY_LIMITED(c) of bpf/bucket.h.
func policyLimited(c cac.Class) uint32 {
	return uint32(bpf.XdpCacPolicyPOLICY_LIMITED_FIRST) << c
}

// policyWord packs the word that puts slot in force, with the bits of
// the classes limited and of the agents.
func policyWord(slot, limited uint32, agents bool) uint32 {
	word := slot&policySlot | limited
	if agents {
		word |= policyAgents
	}
	return word
}

// wordSlot is the slot a policy word puts in force.
func wordSlot(word uint32) uint32 { return word & policySlot }

// limitedClasses are the policyLimited bits of the classes that some
// level of p limits, call admission included.
func limitedClasses(p policy.Policy) uint32 {
	var bits uint32
	for _, c := range cac.Classes() {
		if p.Limits(c) {
			bits |= policyLimited(c)
		}
	}
	return bits
}
