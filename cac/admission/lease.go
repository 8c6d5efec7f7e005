package admission

// GrantLease adds n granted tokens to lease i, as maps.Leases.Grant does:
// a fleet-scope level (docs/design.md, "Fleet") admits a call while its
// lease holds a token, and the call spends it.
func (m *Model) GrantLease(i uint32, n int64) {
	if m.leases == nil {
		m.leases = map[uint32]int64{}
	}
	m.leases[i] += n
}

// ExpireLease takes back up to n of the tokens lease i holds and returns
// how many it took, as maps.Leases.Expire does.
func (m *Model) ExpireLease(i uint32, n int64) int64 {
	take := max(0, min(n, m.leases[i]))
	if take > 0 {
		m.leases[i] -= take
	}
	return take
}

// LeaseTokens is what lease i holds.
func (m *Model) LeaseTokens(i uint32) int64 { return m.leases[i] }
