package admission

import (
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// measured applies the on-stale rule to the inputs; stale reports a
// control plane that wrote its last heartbeat more than stale-after ago.
func measured(ca policy.CallAdmission, in policy.Inputs, now uint64) (m policy.Inputs, stale bool) {
	m = in
	if in.HeartbeatNS != 0 && ca.StaleAfterNS != 0 && now > in.HeartbeatNS+ca.StaleAfterNS {
		stale = true
		if ca.OnStale == policy.StaleOpen {
			m.LoadMilli, m.CPUMilli, m.BuffersFull = 0, 0, false
		}
	}
	return m, stale
}

// gates is cac_gates: stale, then in the new model the CPU gate and full
// buffers, before any bucket.
func (m *Model) gates(now uint64) (policy.Inputs, cac.Reason, bool) {
	ca := m.policy.CallAdmission
	in, stale := measured(ca, m.inputs, now)
	switch {
	case stale && ca.OnStale == policy.StaleClosed:
		return in, cac.ReasonStale, true
	case ca.NewModel && ca.CPULimitMilli != 0 && in.CPUMilli >= ca.CPULimitMilli:
		return in, cac.ReasonCPULimit, true
	case ca.NewModel && in.BuffersFull:
		return in, cac.ReasonBuffers, true
	}
	return in, 0, false
}

// chargeTake is charge_take: the charge budget, last in the pipeline.
func (m *Model) chargeTake(c cac.Class, in policy.Inputs, now uint64) (cac.Reason, bool) {
	ca := m.policy.CallAdmission
	reason := cac.ReasonTotalCharge
	if ca.NewModel {
		reason = cac.ReasonSessionCharges
	}
	if !ca.NewModel && in.BuffersFull {
		return reason, true
	}
	used := policy.SessionCharges(ca, &m.rings, now)
	if !ca.NewModel {
		used += in.LoadMilli
	}
	t, _ := cac.CallTypeOf(c)
	ch := ca.Charges[t]
	held := ch.Charge != 0 && ch.LifetimeTicks != 0 && ch.LifetimeTicks <= policy.MaxLifetimeTicks
	var charge uint64
	if held {
		charge = uint64(ch.Charge) * 1000
	}
	if used+charge > ca.LimitMilli {
		return reason, true
	}
	// A fleet-scope limit: the call spends its cost of the fleet's lease
	// too (docs/design.md, "Fleet").
	if cost := ca.Cost(t); ca.Fleet && held && cost > 0 {
		ls := m.lease(policy.LeaseCallAdmission)
		if ls.spendable(now) < int64(cost) {
			return reason, true
		}
		ls.tokens -= int64(cost)
	}
	if held {
		m.rings[t].Total++
	}
	return 0, false
}

// SetInputs puts the control plane's measurements in force, as
// maps.WriteInputs does.
func (m *Model) SetInputs(in policy.Inputs) { m.inputs = in }

// ChargeRings returns a copy of the model's charge rings.
func (m *Model) ChargeRings() [cac.NumCallTypes]policy.ChargeRing { return m.rings }
