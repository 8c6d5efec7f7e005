package maps

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// SessionLimits is CAC_MAX_SESSION_LIMITS of bpf/shared.h: the index space
// of the max-sessions limits, accounts' first, then customers', then
// session agents'.
const SessionLimits = policy.MaxAccounts + policy.MaxCustomers + policy.MaxAgents

// AccountSessions and CustomerSessions are the indexes of the session
// limits of an account and a customer of bucket index i.
func AccountSessions(i uint32) uint32  { return i }
func CustomerSessions(i uint32) uint32 { return policy.MaxAccounts + i }

// AgentSessions is the index of the session limit of session agent i, a
// connection at egress.
func AgentSessions(i uint32) uint32 { return policy.MaxAccounts + policy.MaxCustomers + i }

// IsAgentSessions reports whether session limit l is a session agent's.
func IsAgentSessions(l uint32) bool { return l >= AgentSessions(0) }

// noSessionLimit is CAC_NO_SESSION_LIMIT: a struct cac_session field of a
// limit the dialog took nothing of.
const noSessionLimit = uint32(bpf.XdpCacCapacityCAC_NO_SESSION_LIMIT)

// writeSessionLimits fills slot of the session_limits map with the
// max-sessions of p's accounts and customers, at their indexes, and no
// limit everywhere else.
func writeSessionLimits(m *ebpf.Map, slot uint32, p policy.Policy, idx policy.Indexes) error {
	if m == nil {
		return nil
	}
	vals := make([]uint32, SessionLimits)
	for i, a := range p.Accounts {
		vals[AccountSessions(idx.Accounts[i])] = a.MaxSessions
	}
	for i, n := range p.CustomerSessions {
		vals[CustomerSessions(idx.Customers[i])] = n
	}
	for i, a := range p.Agents {
		vals[AgentSessions(uint32(i))] = a.MaxSessions
	}
	keys := make([]uint32, SessionLimits)
	for i := range keys {
		keys[i] = slot*SessionLimits + uint32(i)
	}
	if _, err := m.BatchUpdate(keys, vals, nil); err == nil {
		return nil
	} else if !errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("write session limits: %w", err)
	}
	for i, k := range keys {
		if err := m.Update(k, vals[i], ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write session limit %d: %w", i, err)
		}
	}
	return nil
}

// SessionMaps are the maps of capacity: the dialogs that hold sessions,
// and what each limit's dialogs took and gave back.
type SessionMaps struct {
	Sessions, Taken, Freed *ebpf.Map
}

// Whole reports whether every session map is there: an attachment of a
// version without capacity has none of them until an upgrade.
func (sm SessionMaps) Whole() bool { return sm.Sessions != nil && sm.Taken != nil && sm.Freed != nil }

// SessionMapsOf picks the session maps out of the program's maps.
func SessionMapsOf(o *bpf.XdpMaps) SessionMaps {
	return SessionMaps{Sessions: o.Sessions, Taken: o.SessionsTaken, Freed: o.SessionsFreed}
}

// HeldSession is a dialog the fast path took sessions for.
type HeldSession struct {
	TakenNS uint64   // monotonic
	Limits  []uint32 // the session limits it took one of
}

// ReadSessions reads the dialogs that hold sessions, by Call-ID hash.
func ReadSessions(m *ebpf.Map) (map[uint64]HeldSession, error) {
	out := map[uint64]HeldSession{}
	var k uint64
	var v bpf.XdpCacSession
	it := m.Iterate()
	for it.Next(&k, &v) {
		out[k] = heldOf(v)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return out, nil
}

// LookupSession reads one dialog that holds sessions.
func LookupSession(m *ebpf.Map, callid uint64) (HeldSession, bool) {
	var v bpf.XdpCacSession
	if err := m.Lookup(callid, &v); err != nil {
		return HeldSession{}, false
	}
	return heldOf(v), true
}

func heldOf(v bpf.XdpCacSession) HeldSession {
	h := HeldSession{TakenNS: v.TakenNs}
	for _, l := range []uint32{v.Account, v.Customer, v.Connection} {
		if l != noSessionLimit {
			h.Limits = append(h.Limits, l)
		}
	}
	return h
}

// SessionCount is how many sessions limit i holds: what its dialogs took
// less what they gave back.
func SessionCount(sm SessionMaps, i uint32) (uint64, error) {
	var taken, freed uint64
	if err := sm.Taken.Lookup(i, &taken); err != nil {
		return 0, fmt.Errorf("read sessions taken of limit %d: %w", i, err)
	}
	if err := sm.Freed.Lookup(i, &freed); err != nil {
		return 0, fmt.Errorf("read sessions given back of limit %d: %w", i, err)
	}
	if freed > taken {
		return 0, nil
	}
	return taken - freed, nil
}

// GiveBack forgets a dialog that held sessions and gives back the
// session it took of each of its limits. The daemon alone calls it: the
// fast path never writes what was given back, so the read and the write
// of one limit's count lose nothing. A dialog the table no longer holds
// gave its sessions back already, and gives nothing.
func GiveBack(sm SessionMaps, callid uint64) error {
	var v bpf.XdpCacSession
	if err := sm.Sessions.LookupAndDelete(callid, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("forget session dialog: %w", err)
		}
		// Before Linux 5.14 a hash map has no lookup-and-delete.
		if err := sm.Sessions.Lookup(callid, &v); err != nil {
			return nil
		}
		if err := sm.Sessions.Delete(callid); err != nil {
			return nil // the fast path gave it back first
		}
	}
	for _, l := range []uint32{v.Account, v.Customer, v.Connection} {
		if l == noSessionLimit {
			continue
		}
		var freed uint64
		if err := sm.Freed.Lookup(l, &freed); err != nil {
			return fmt.Errorf("read sessions given back of limit %d: %w", l, err)
		}
		if err := sm.Freed.Update(l, freed+1, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("give back a session of limit %d: %w", l, err)
		}
	}
	return nil
}
