package admission

// lease is one fleet-scope lease as bpf/lease.h keeps it: the tokens
// granted and not spent or expired, and when the newest grant's lifetime
// ends, after which none of them is spent (docs/design.md, "Fleet").
type lease struct {
	tokens    int64
	expiresNS uint64
}

// spendable is what the lease may spend at now: its tokens, none past its
// lifetime.
func (l *lease) spendable(now uint64) int64 {
	if now >= l.expiresNS {
		return 0
	}
	return l.tokens
}

// lease is lease i, made empty (never granted, spending nothing) at its
// first use.
func (m *Model) lease(i uint32) *lease {
	if m.leases == nil {
		m.leases = map[uint32]*lease{}
	}
	l := m.leases[i]
	if l == nil {
		l = &lease{}
		m.leases[i] = l
	}
	return l
}

// GrantLease adds n granted tokens to lease i, spent until expiresNS on
// the model's clock, as maps.Leases.Grant does: a fleet-scope level
// admits a call while its lease holds a token within its lifetime, and
// the call spends it. An expiry earlier than the one in force leaves it.
func (m *Model) GrantLease(i uint32, n int64, expiresNS uint64) {
	l := m.lease(i)
	l.tokens += n
	l.expiresNS = max(l.expiresNS, expiresNS)
}

// ExpireLease takes back up to n of the tokens lease i holds and returns
// how many it took, as maps.Leases.Expire does.
func (m *Model) ExpireLease(i uint32, n int64) int64 {
	l := m.lease(i)
	take := max(0, min(n, l.tokens))
	l.tokens -= take
	return take
}

// LeaseTokens is what lease i holds.
func (m *Model) LeaseTokens(i uint32) int64 { return m.lease(i).tokens }
