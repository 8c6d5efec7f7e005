package admission

import (
	"github.com/xdpcac/xdpcac/cac/policy"
)

// sessionLimits is CAC_MAX_SESSION_LIMITS: accounts', customers', agents'.
const sessionLimits = policy.MaxAccounts + policy.MaxCustomers + policy.MaxAgents

// sessionTake is session_take of bpf/sessions.h: the account acct of an
// INVITE of Call-ID callid takes a session of its max-sessions and of its
// customer's. It reports whether the dialog took any, and full when one
// of the two is at its limit, having taken nothing. A dialog that holds
// sessions already, no account, or no Call-ID takes none.
func (m *Model) sessionTake(callid uint64, acct int) (took, full bool) {
	if acct < 0 {
		return false, false
	}
	a := m.policy.Accounts[acct]
	if callid == 0 { // a dialog that could not end is refused where it would hold a session
		return false, a.MaxSessions > 0 || m.customerSessions(a.Customer) > 0
	}
	if _, ok := m.sessions[callid]; ok {
		return false, false
	}
	var limits []uint32
	for _, l := range []struct {
		index, max uint32
	}{
		{m.index.Accounts[acct], a.MaxSessions},
		{policy.MaxAccounts + m.index.Customers[a.Customer], m.customerSessions(a.Customer)},
	} {
		if l.max == 0 {
			continue
		}
		if m.sessionsHeld[l.index] >= uint64(l.max) {
			for _, i := range limits {
				m.sessionsHeld[i]--
			}
			return false, true
		}
		m.sessionsHeld[l.index]++
		limits = append(limits, l.index)
	}
	if len(limits) == 0 {
		return false, false
	}
	if m.sessions == nil {
		m.sessions = map[uint64][]uint32{}
	}
	m.sessions[callid] = limits
	return true, false
}

func (m *Model) customerSessions(c int) uint32 {
	if c < len(m.policy.CustomerSessions) {
		return m.policy.CustomerSessions[c]
	}
	return 0
}

// GiveBack is what the daemon does when a dialog that holds sessions
// ends (maps.GiveBack): it forgets the dialog and gives back its sessions.
func (m *Model) GiveBack(callid uint64) {
	for _, i := range m.sessions[callid] {
		m.sessionsHeld[i]--
	}
	delete(m.sessions, callid)
}

// SessionsHeld is how many sessions the dialogs of session limit i hold.
func (m *Model) SessionsHeld(i uint32) uint64 { return m.sessionsHeld[i] }

// SessionDialogs are the Call-ID hashes of the dialogs that hold sessions.
func (m *Model) SessionDialogs() []uint64 {
	out := make([]uint64, 0, len(m.sessions))
	for id := range m.sessions {
		out = append(out, id)
	}
	return out
}

// connectionKey is connection_key of bpf/sessions.h: the key of a
// dialog's part toward agent, apart from its account's.
func connectionKey(callid uint64, agent int) uint64 {
	k := (callid ^ 0x636f6e6e656374 ^ uint64(agent)<<56) * 0x100000001b3
	if k == 0 {
		return 1
	}
	return k
}

// connectionTake is session_of_connection: an INVITE of callid toward
// agent takes a session of the agent's max-sessions, unless its part
// toward the agent holds one already. It reports whether it took one,
// and full when the agent was at its limit (or the Call-ID unreadable),
// having taken nothing.
func (m *Model) connectionTake(callid uint64, agent int) (took, full bool) {
	max := m.policy.Agents[agent].MaxSessions
	if max == 0 {
		return false, false
	}
	if callid == 0 {
		return false, true
	}
	key := connectionKey(callid, agent)
	if _, ok := m.sessions[key]; ok {
		return false, false
	}
	i := uint32(policy.MaxAccounts + policy.MaxCustomers + agent)
	if m.sessionsHeld[i] >= uint64(max) {
		return false, true
	}
	m.sessionsHeld[i]++
	if m.sessions == nil {
		m.sessions = map[uint64][]uint32{}
	}
	m.sessions[key] = []uint32{i}
	return true, false
}
