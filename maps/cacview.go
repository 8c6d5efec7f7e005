package maps

import (
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// CallAdmissionView is `cacctl show call admission statistics -o json`:
// the figures of the IOS layout, in units an operator configured (charges
// and percents, not thousandths).
type CallAdmissionView struct {
	Operational bool    `json:"operational"`
	NewModel    bool    `json:"new_model"`
	Limit       float64 `json:"limit"`
	// CPULimitPercent is the new model's gate; 0 is none.
	CPULimitPercent float64 `json:"cpu_limit_percent"`
	// TotalCharges is what the old model holds against the limit: session
	// charges and the load charge.
	TotalCharges   float64               `json:"total_charges"`
	SessionCharges float64               `json:"session_charges"`
	LoadCharge     float64               `json:"load_charge"`
	LoadPercent    float64               `json:"load_unscaled_percent"` // the Pcpu of the load charge
	CPUPercent     float64               `json:"cpu_percent"`           // the last interval: the gate's
	BuffersFull    bool                  `json:"buffers_full"`
	Accepted       uint64                `json:"accepted"`
	Rejected       uint64                `json:"rejected"`
	Reasons        map[string]uint64     `json:"reasons"`
	Charges        map[string]ChargeView `json:"charges"`
	// HeartbeatAgeMS is how old the control plane's last write is; null
	// when no control plane ever wrote (attached with cacctl attach).
	HeartbeatAgeMS *int64   `json:"heartbeat_age_ms"`
	Stale          bool     `json:"stale"`
	StaleAfterMS   int64    `json:"stale_after_ms"`
	OnStale        string   `json:"on_stale"`
	Interfaces     []string `json:"interfaces"` // where the XDP path is active
	// ClearedAt: Accepted, Rejected and Reasons count from then, the last
	// clear call admission statistics (docs/design.md, "Clearing
	// counters"); null when they count from the attach.
	ClearedAt *time.Time `json:"cleared_at"`
	// LastCPURefusal is the last CPU sample the cpu-limit gate refused
	// calls with, which cacctl run keeps; null without it or before any.
	LastCPURefusal *CPURefusal `json:"last_cpu_refusal"`
}

// CPURefusal is a CPU sample that the cpu-limit gate refused calls with:
// the percent measured, when it was put in force and replaced, and the
// calls refused as cpu-limit meanwhile.
type CPURefusal struct {
	CPUPercent float64   `json:"cpu_percent"`
	From       time.Time `json:"from"`
	Until      time.Time `json:"until"`
	Refused    uint64    `json:"refused"`
}

// ChargeView is one call type's charge line and the calls holding it.
type ChargeView struct {
	Charge    uint32  `json:"charge"`
	LifetimeS float64 `json:"lifetime_s"`
	InForce   uint64  `json:"in_force"`
}

// CallAdmissionReasons are the reasons call admission rejects with, as
// opposed to the buckets'.
func CallAdmissionReasons() []cac.Reason {
	return []cac.Reason{cac.ReasonStale, cac.ReasonCPULimit, cac.ReasonBuffers, cac.ReasonSessionCharges, cac.ReasonTotalCharge}
}

func fromMilli(v uint64) float64 { return float64(v) / 1000 }

// CallAdmissionViewOf builds the view at monotonic time now from what the
// maps hold: the call admission in force, the measurements, the charge
// rings (advanced to now on this copy) and the counters summed over
// interfaces.
func CallAdmissionViewOf(ca policy.CallAdmission, in policy.Inputs, rings [cac.NumCallTypes]policy.ChargeRing, s Stats, now uint64, ifaces []string) CallAdmissionView {
	v := CallAdmissionView{
		Operational:     ca.Operational(),
		NewModel:        ca.NewModel,
		Limit:           fromMilli(ca.LimitMilli),
		CPULimitPercent: fromMilli(uint64(ca.CPULimitMilli)),
		LoadCharge:      fromMilli(in.LoadMilli),
		LoadPercent:     fromMilli(uint64(in.CPUAverageMilli)),
		CPUPercent:      fromMilli(uint64(in.CPUMilli)),
		BuffersFull:     in.BuffersFull,
		Reasons:         map[string]uint64{},
		Charges:         map[string]ChargeView{},
		StaleAfterMS:    int64(ca.StaleAfterNS / 1e6),
		Interfaces:      append([]string{}, ifaces...), // [] when nothing is attached, not null
	}
	v.OnStale = ca.OnStale.String()
	v.SessionCharges = fromMilli(policy.SessionCharges(ca, &rings, now))
	v.TotalCharges = v.SessionCharges + v.LoadCharge
	tick := now / policy.TickNS
	for t, c := range ca.Charges {
		if c.Charge == 0 {
			continue
		}
		v.Charges[cac.CallType(t).String()] = ChargeView{
			Charge: c.Charge, LifetimeS: float64(c.LifetimeTicks) * policy.TickNS / 1e9,
			InForce: rings[t].InForce(tick, c.LifetimeTicks),
		}
	}
	for _, c := range cac.Classes() {
		if _, call := cac.CallTypeOf(c); !call {
			continue
		}
		v.Accepted += s.Classes[c].Admitted
		for _, r := range CallAdmissionReasons() {
			v.Reasons[r.String()] += s.Classes[c].Rejected[r]
			v.Rejected += s.Classes[c].Rejected[r]
		}
	}
	if in.HeartbeatNS != 0 {
		age := int64(now-in.HeartbeatNS) / 1e6
		if now < in.HeartbeatNS {
			age = 0
		}
		v.HeartbeatAgeMS = &age
		v.Stale = ca.StaleAfterNS != 0 && now > in.HeartbeatNS+ca.StaleAfterNS
	}
	return v
}
