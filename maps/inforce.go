package maps

import (
	"fmt"
	"net/netip"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// InForce is the policy the fast path holds, read back from the slot in
// force: everything one apply writes, so that two reads compare whole.
type InForce struct {
	// Word is the policy word less its slot bit: which classes are
	// limited, and whether session agents are.
	Word     uint32
	Limits   bpf.XdpCacLimits
	Accounts map[netip.Prefix]AccountInForce
	// UserAccounts are the accounts of cli and called rules.
	UserAccounts map[policy.Rule]AccountInForce
	Agents       []bpf.XdpCacAgent // the configured ones, by index
	// AgentEgress: their connection limits and flags, by index; none
	// from an attachment of a version without egress admission.
	AgentEgress []bpf.XdpCacAgentEgress
	// AgentSessions: their max-sessions and the dialogs toward them that
	// hold one, by index.
	AgentSessions []SessionsInForce
}

// AccountInForce is an account prefix's limit and its customer's, and
// their limits of concurrent sessions with the sessions held.
type AccountInForce struct {
	Limit, Customer bpf.XdpCacLimit
	Sessions        SessionsInForce
	CustomerSess    SessionsInForce
}

// SessionsInForce is a max-sessions limit (0: none) and the sessions its
// dialogs hold.
type SessionsInForce struct {
	Max  uint32
	Held uint64
}

// ReadInForce reads the policy of the slot in force. It is meant for a
// quiet moment: a read during an apply may see the slot switch under it.
func ReadInForce(pm PolicyMaps) (InForce, error) {
	var word uint32
	if err := pm.Slot.Lookup(uint32(0), &word); err != nil {
		return InForce{}, fmt.Errorf("read policy slot: %w", err)
	}
	slot := wordSlot(word)
	in := InForce{Word: word &^ policySlot, Accounts: map[netip.Prefix]AccountInForce{}, UserAccounts: map[policy.Rule]AccountInForce{}}
	if err := pm.Limits.Lookup(slot, &in.Limits); err != nil {
		return in, fmt.Errorf("read limits: %w", err)
	}
	rules, err := readRules(pm, slot)
	if err != nil {
		return in, err
	}
	for r, idx := range rules {
		var a AccountInForce
		if err := pm.AccountLimits.Lookup(slot*policy.MaxAccounts+idx.Account, &a.Limit); err != nil {
			return in, fmt.Errorf("read limit of account %s: %w", r, err)
		}
		if err := pm.CustomerLimits.Lookup(slot*policy.MaxCustomers+idx.Customer, &a.Customer); err != nil {
			return in, fmt.Errorf("read limit of the customer of %s: %w", r, err)
		}
		if a.Sessions, err = readSessionsInForce(pm, slot, AccountSessions(idx.Account)); err != nil {
			return in, fmt.Errorf("account %s: %w", r, err)
		}
		if a.CustomerSess, err = readSessionsInForce(pm, slot, CustomerSessions(idx.Customer)); err != nil {
			return in, fmt.Errorf("the customer of %s: %w", r, err)
		}
		if r.Kind == policy.RuleSource {
			in.Accounts[r.Prefix] = a
		} else {
			in.UserAccounts[r] = a
		}
	}
	for i := range in.Limits.Agents {
		var a bpf.XdpCacAgent
		if err := pm.AgentLimits.Lookup(slot*policy.MaxAgents+i, &a); err != nil {
			return in, fmt.Errorf("read session agent %d: %w", i, err)
		}
		in.Agents = append(in.Agents, a)
		if pm.AgentEgress == nil {
			continue
		}
		var e bpf.XdpCacAgentEgress
		if err := pm.AgentEgress.Lookup(slot*policy.MaxAgents+i, &e); err != nil {
			return in, fmt.Errorf("read connection limit of session agent %d: %w", i, err)
		}
		in.AgentEgress = append(in.AgentEgress, e)
		ss, err := readSessionsInForce(pm, slot, AgentSessions(i))
		if err != nil {
			return in, fmt.Errorf("session agent %d: %w", i, err)
		}
		in.AgentSessions = append(in.AgentSessions, ss)
	}
	return in, nil
}

// readSessionsInForce reads limit i's max-sessions in slot and what its
// dialogs hold; nothing from an attachment of a version without capacity.
func readSessionsInForce(pm PolicyMaps, slot, i uint32) (SessionsInForce, error) {
	var v SessionsInForce
	if pm.SessionLimits == nil || pm.SessionsTaken == nil || pm.SessionsFreed == nil {
		return v, nil
	}
	if err := pm.SessionLimits.Lookup(slot*SessionLimits+i, &v.Max); err != nil {
		return v, fmt.Errorf("read max-sessions: %w", err)
	}
	held, err := SessionCount(SessionMaps{Taken: pm.SessionsTaken, Freed: pm.SessionsFreed}, i)
	v.Held = held
	return v, err
}
