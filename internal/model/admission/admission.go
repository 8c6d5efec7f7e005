package admission

import (
	"fmt"
	"github.com/xdpcac/xdpcac/internal/model/access"
	"net/netip"
	"strings"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	"github.com/xdpcac/xdpcac/internal/model/l2tp"
)

// Model is the fast path in Go.
type Model struct {
	Ports         *classify.Ports
	MalformedDrop bool
	// Access is access control's state (lists, auto-deny, the deny
	// table); nil for none.
	Access     *access.Table
	policy     policy.Policy
	index      policy.Indexes               // of policy's accounts and customers
	rules      map[policy.Rule]policy.Index // in force, as the fast path's tries hold them
	levels     [policy.NumLevels]bucket.Bucket
	accounts   [policy.MaxAccounts]bucket.Bucket
	customers  [policy.MaxCustomers]bucket.Bucket
	sources    map[sourceKey]*bucket.Bucket
	inputs     policy.Inputs
	rings      [cac.NumCallTypes]policy.ChargeRing
	agentAddrs map[netip.Addr]int // as the fast path's agents table
	agents     [policy.MaxAgents]bucket.Bucket
	dialogs    dialogTable
	refused    refusedTable
	tunnels    l2tp.Table
	// Egress admission (egress.go).
	agentOut      [policy.MaxAgents]bool
	connections   [policy.MaxAgents]bucket.Bucket
	egressTxns    map[uint64]egressSent // Call-ID → the INVITE sent
	egressRefused map[uint64]uint64     // Call-ID → time refused
	egressCounts  [policy.MaxAgents]EgressCounts
	// Capacity (sessions.go): the dialogs that hold sessions, by Call-ID,
	// with the session limits they took one of, and what each holds.
	sessions     map[uint64][]uint32
	sessionsHeld [sessionLimits]uint64
	// Fleet (lease.go): the tokens each lease holds, by lease index.
	leases map[uint32]*lease
	// The SIP message of the frame in hand, read with the index of its
	// header lines kept for the readers after the classifier, as the
	// program keeps it in its sip_index map: one walk over them a frame.
	sip classify.Reader
}

// SetAgentAddrs puts the addresses of session agents in force (IPv4
// mapped into IPv6), as maps.WriteAgentAddrs does.
func (m *Model) SetAgentAddrs(addrs map[netip.Addr]int) { m.agentAddrs = addrs }

// SetPolicy puts a policy in force as maps.WritePolicy does: buckets are
// kept, accounts and customers keep theirs by policy.AssignIndexes.
func (m *Model) SetPolicy(p policy.Policy) error {
	ix, err := policy.AssignIndexes(p, m.rules)
	if err != nil {
		return err
	}
	for _, i := range ix.FreshAccounts {
		m.accounts[i] = bucket.Bucket{}
	}
	for _, i := range ix.FreshCustomers {
		m.customers[i] = bucket.Bucket{}
	}
	m.rules = map[policy.Rule]policy.Index{}
	for i, a := range p.Accounts {
		m.rules[a.Rule()] = policy.Index{Account: ix.Accounts[i], Customer: ix.Customers[a.Customer]}
	}
	m.policy, m.index = p, ix
	return nil
}

// sourceKey is struct cac_source: a source as the per-source table knows it.
type sourceKey struct {
	class  cac.Class
	family uint8
	vlans  [2]uint16
	addr   [16]byte
}

// keyOf makes the per-source key of a source of class c.
func keyOf(c cac.Class, ps policy.PerSource, s classify.Source) sourceKey {
	k := sourceKey{class: c, family: s.Family}
	switch {
	case s.Family == 4:
		copy(k.addr[:4], s.Addr[:4])
	case s.Family == 6:
		bits := ps.IPv6Prefix
		for i := range k.addr {
			switch {
			case bits >= 8:
				k.addr[i] = s.Addr[i]
				bits -= 8
			default:
				k.addr[i] = s.Addr[i] & byte(uint16(0xff00)>>bits)
				bits = 0
			}
		}
	default: // PPPoE
		if ps.Key != policy.SourceVLAN {
			copy(k.addr[:6], s.MAC[:])
		}
		if ps.Key != policy.SourceMAC {
			k.vlans = s.VLANs
		}
	}
	return k
}

// Decision is what the fast path does with one frame.
type Decision struct {
	classify.Result
	Verdict  cac.Verdict
	Rejected bool
	Reason   cac.Reason // when Rejected
	// Uncharged: a request of a dialog the filter admitted, or a
	// retransmission of an INVITE it admitted; no limit was asked.
	Uncharged bool
	// Retransmit: an INVITE retransmission within Timer B, passed
	// uncharged or refused again for the reason its transaction was; or
	// a copy of an ICRQ of a translated tunnel, likewise.
	Retransmit bool
	// Answered: a refused ICRQ turned into the ZLB that answers it
	// (Verdict TX); Unanswered: one that could only be dropped, its
	// tunnel not translated.
	Answered, Unanswered bool
	// Denied: a frame of a denied source, dropped before its parse by
	// the static lists (access.Deny) or the deny table (access.Auto).
	Denied access.Verdict
}

func (d Decision) String() string {
	var s string
	if d.Rejected {
		s = fmt.Sprintf("%v rejected (%v)", d.Result, d.Reason)
	} else {
		s = fmt.Sprintf("%v %v", d.Result, d.Verdict)
	}
	if d.Retransmit {
		s += ", a retransmission"
	}
	if d.Answered {
		s += ", answered"
	}
	if d.Unanswered {
		s += ", unanswered"
	}
	if d.Uncharged {
		s += ", uncharged"
	}
	return s
}

// Admit runs a first packet of class c from src at now through the levels
// in order: the call admission gates, the buckets, the charge budget. The
// first that fails names the reason, and a rejected call takes nothing. A
// new source enters the per-source table only when admitted; a source in
// an account never does. In-dialog requests and malformed frames are held
// by their per-source and class buckets alone; a known source (an account,
// an agent) skips the per-source one of in-dialog requests, and an agent's
// are never held. Either bucket of malformed rejects for one reason.
func (m *Model) Admit(c cac.Class, src classify.Source, now uint64) (reason cac.Reason, rejected bool) {
	return m.AdmitUsers(c, src, Users{}, now)
}

// Users are what a SIP request names for the authentication rules
// (classify.CLIOf and classify.CalledOf).
type Users struct {
	CLI, Called string
}

// AdmitUsers is Admit for a request that names users: a CLI rule's
// account, or else a called-number rule's, comes before the source
// prefix's (docs/design.md, "Authentication rules").
func (m *Model) AdmitUsers(c cac.Class, src classify.Source, users Users, now uint64) (reason cac.Reason, rejected bool) {
	reason, rejected = m.admit(c, src, users, now)
	if rejected && c == cac.ClassMalformed {
		reason = cac.ReasonMalformed
	}
	return reason, rejected
}

func (m *Model) admit(c cac.Class, src classify.Source, users Users, now uint64) (reason cac.Reason, rejected bool) {
	_, call := cac.CallTypeOf(c)
	charged := call && m.policy.CallAdmission.Operational()
	var in policy.Inputs
	if charged {
		var r cac.Reason
		if in, r, rejected = m.gates(now); rejected {
			return r, true
		}
	}
	type level struct {
		limit   bucket.Limit
		bucket  *bucket.Bucket
		reason  cac.Reason
		reserve uint64 // of the tolerance, a stranger's call leaves
		lease   uint32 // of a fleet-scope level (limit.Fleet)
	}
	var levels []level
	acct := m.accountFor(c, src, users)
	// A known SIP peer has its agent's bucket instead of a per-source one.
	agent := -1
	// Its connections (sip-connect) are held as its requests are, by the
	// shared levels' reserve, but not by its own bucket.
	if (c.IsSIPRequest() || c == cac.SIPConnect) && len(m.policy.Agents) > 0 && src.Family != 0 {
		if i, ok := m.agentAddrs[addrOf(src)]; ok && i < len(m.policy.Agents) {
			agent = i
		}
	}
	if agent >= 0 && c == cac.SIPInDialog {
		return 0, false
	}
	var newSource *sourceKey
	ps := m.policy.PerSource[c]
	if ps.Limit != bucket.Unlimited && acct < 0 && agent < 0 {
		k := keyOf(c, ps, src)
		if b, ok := m.sources[k]; ok {
			levels = append(levels, level{ps.Limit, b, cac.ReasonSource, 0, 0})
		} else {
			newSource = &k
		}
	}
	if acct >= 0 && !c.Sessionless() {
		a := m.policy.Accounts[acct]
		ai, ci := m.index.Accounts[acct], m.index.Customers[a.Customer]
		levels = append(levels,
			level{a.Limit, &m.accounts[ai], cac.ReasonAccount, 0, policy.LeaseOfAccount(ai)},
			level{m.policy.Customers[a.Customer], &m.customers[ci], cac.ReasonCustomer, 0, policy.LeaseOfCustomer(ci)})
	}
	if agent >= 0 && c != cac.SIPConnect {
		levels = append(levels, level{m.policy.Agents[agent].Limit, &m.agents[agent], cac.ReasonAgent, 0, 0})
	}
	// Trusted first: an agent's call may take the shared levels' reserve.
	reserve := func(l int) uint64 {
		if agent >= 0 {
			return 0
		}
		return m.policy.ReserveNS[l]
	}
	levels = append(levels, level{m.policy.Levels[c], &m.levels[c], cac.ReasonClass, reserve(int(c)), policy.LeaseOfLevel(int(c))})
	if !c.Sessionless() {
		env := policy.LevelEnvironment
		levels = append(levels, level{m.policy.Levels[env], &m.levels[env], cac.ReasonEnvironment, reserve(env), policy.LeaseOfLevel(env)})
	}

	for _, l := range levels {
		if l.limit.Fleet && m.lease(l.lease).spendable(now) <= 0 {
			return l.reason, true
		}
		if !l.limit.Fleet && !l.bucket.ConformsLeaving(l.limit, l.reserve, now) {
			return l.reason, true
		}
	}
	if charged {
		if r, rejected := m.chargeTake(c, in, now); rejected {
			return r, true
		}
	}
	for _, l := range levels {
		if l.limit.Fleet {
			m.lease(l.lease).tokens--
		} else {
			l.bucket.TakeLeaving(l.limit, l.reserve, now)
		}
	}
	if newSource != nil {
		if m.sources == nil {
			m.sources = map[sourceKey]*bucket.Bucket{}
		}
		b := &bucket.Bucket{}
		b.Take(ps.Limit, now)
		m.sources[*newSource] = b
	}
	return 0, false
}

// accountFor is the index of the account of a request of class c from
// src naming users, or -1: a CLI rule's, else a called-number rule's (SIP
// requests out of dialog only), else a source prefix's.
func (m *Model) accountFor(c cac.Class, src classify.Source, users Users) int {
	acct := -1
	if c >= cac.SIPInvite && c <= cac.SIPOther && m.policy.UserRules() {
		if acct = userAccountOf(&m.policy, policy.RuleCLI, users.CLI); acct < 0 {
			acct = userAccountOf(&m.policy, policy.RuleCalled, users.Called)
		}
	}
	if acct < 0 && m.policy.SourceAccounts() > 0 && src.Family != 0 && c != cac.ClassMalformed {
		acct = accountOf(&m.policy, addrOf(src))
	}
	return acct
}

// RuleOf is the kind of the rule whose account holds a request of class c
// from src naming users, as Admit finds it, and false for none: what a
// test asks to see each kind decide.
func (m *Model) RuleOf(c cac.Class, src classify.Source, users Users) (policy.RuleKind, bool) {
	if acct := m.accountFor(c, src, users); acct >= 0 {
		return m.policy.Accounts[acct].Kind, true
	}
	return 0, false
}

// accountOf returns the index of the account of p whose prefix holds addr
// (an IPv6 or mapped address) most specifically, as the LPM trie does, or -1.
func accountOf(p *policy.Policy, addr netip.Addr) int {
	best, bits := -1, -1
	for i, a := range p.Accounts {
		if m := policy.Mapped(a.Prefix); a.Kind == policy.RuleSource && m.Contains(addr) && m.Bits() > bits {
			best, bits = i, m.Bits()
		}
	}
	return best
}

// userAccountOf returns the index of the account of p whose rule of kind
// is the longest prefix of user, as the user trie finds it, or -1. The
// trie compares the user's first policy.UserMax bytes, zero padded; a
// rule holds no zero byte, so a prefix of those bytes is a match.
func userAccountOf(p *policy.Policy, kind policy.RuleKind, user string) int {
	if user == "" {
		return -1
	}
	user = user[:min(len(user), policy.UserMax)]
	best, n := -1, 0
	for i, a := range p.Accounts {
		if a.Kind == kind && len(a.User) > n && strings.HasPrefix(user, a.User) {
			best, n = i, len(a.User)
		}
	}
	return best
}

// addrOf is the IP address of an IP source, IPv4 mapped into IPv6 as the
// account trie keys it.
func addrOf(s classify.Source) netip.Addr {
	if s.Family == 4 {
		return netip.AddrFrom16(netip.AddrFrom4([4]byte(s.Addr[:4])).As16())
	}
	return netip.AddrFrom16(s.Addr)
}

// Decide classifies frame and, for a first packet, admits or rejects it.
// The frame is as the program reads it, after classify.StripPriorityTags,
// which the program applies first and once.
func (m *Model) Decide(frame []byte, now uint64) Decision {
	if m.Access == nil {
		return m.decide(frame, now)
	}
	if d, denied := m.denied(frame, now); denied {
		return d
	}
	d := m.decide(frame, now)
	m.countRefusal(frame, d, now)
	return d
}

func (m *Model) decide(frame []byte, now uint64) Decision {
	r, msg := m.sip.ClassifySIP(frame, m.Ports)
	d := Decision{Result: r, Verdict: cac.Pass}
	c, held := cac.ClassOf(d.Kind)
	if d.Kind == cac.Session {
		c, held = d.Class, true
	}
	if d.Kind == cac.Other {
		m.l2tpPass(frame, now)
	}
	if !held {
		return d
	}
	var callid, txn uint64
	cancel := c == cac.SIPOther && classify.IsCancel(msg)
	switch {
	case c == cac.SIPInDialog:
		callid = m.sip.CallID(msg)
	case c == cac.SIPInvite || cancel:
		callid, txn = m.sip.Txn(msg)
		txn = classify.FromSource(txn, classify.SourceOf(frame))
	}
	// A request of a dialog the filter admitted, from one of its sides,
	// passes uncharged.
	if c == cac.SIPInDialog && m.dialogs.verified(callid, classify.SourceOf(frame).Peer(), now) {
		d.Uncharged = true
		return d
	}
	// A retransmission takes nothing, where a limit would charge it.
	limited := m.policy.Limits(c) || ((c.IsSIPRequest() || c == cac.SIPConnect) && len(m.policy.Agents) > 0)
	// A CANCEL of an INVITE the filter admitted passes as its copies do.
	if limited && cancel && m.cancels(callid, txn, now) {
		d.Retransmit, d.Uncharged = true, true
		return d
	}
	if limited && c == cac.SIPInvite {
		again, refused, reason := m.retransmit(callid, txn, now)
		if again {
			d.Retransmit, d.Uncharged = true, !refused
			d.Rejected, d.Reason = refused, reason
			if refused {
				d.Verdict = cac.Drop
			}
			return d
		}
	}
	// An ICRQ of a translated tunnel: only the LAC's next message is
	// judged, and one refused is answered (l2tp.go).
	lac, done := m.l2tpCheck(&d, frame, now)
	if done {
		return d
	}
	var users Users
	if c >= cac.SIPInvite && c <= cac.SIPOther {
		users = Users{CLI: m.sip.CLIOf(msg), Called: classify.CalledOf(msg)}
	}
	// Capacity before every other level: a call refused for it takes
	// nothing, one a later level refuses gives back its sessions.
	took := false
	if c == cac.SIPInvite && limited && m.policy.Capacity() {
		var full bool
		if took, full = m.sessionTake(callid, m.accountFor(c, classify.SourceOf(frame), users)); full {
			d.Rejected, d.Reason = true, cac.ReasonCapacity
		}
	}
	if !d.Rejected {
		d.Reason, d.Rejected = m.AdmitUsers(c, classify.SourceOf(frame), users, now)
		if d.Rejected && took {
			m.GiveBack(callid)
		}
	}
	if c == cac.L2TPICRQ {
		m.l2tpJudged(&d, lac)
	}
	if c == cac.SIPInvite {
		if !d.Rejected {
			m.learnInvite(callid, txn, now, classify.SourceOf(frame).Peer())
		} else if limited {
			m.refused.refuse(callid, txn, now, d.Reason)
		}
	}
	if d.Answered {
		d.Verdict = cac.TX
	} else if d.Rejected {
		d.Verdict = cac.Drop
	} else if c == cac.ClassMalformed && m.MalformedDrop {
		d.Verdict = cac.Drop // within its limits, as malformed: says
	}
	return d
}
