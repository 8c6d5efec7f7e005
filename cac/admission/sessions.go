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
	if acct < 0 || callid == 0 {
		return false, false
	}
	if _, ok := m.sessions[callid]; ok {
		return false, false
	}
	a := m.policy.Accounts[acct]
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
