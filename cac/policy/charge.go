package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/config"
)

// The charge ring of bpf/shared.h: charges in force are counted per tick,
// over at most MaxLifetimeTicks ticks, in a ring of RingTicks snapshots.
const (
	TickNS           = 100_000_000
	RingTicks        = 4096
	MaxLifetimeTicks = 3000
)

// OnStale is what the fast path does while the control plane is stale:
// enum cac_on_stale.
type OnStale uint8

// The on-stale policies.
const (
	StaleStatic OnStale = iota // keep the last measurements
	StaleOpen                  // ignore CPU and buffer measurements
	StaleClosed                // reject every call
)

func (s OnStale) String() string {
	if names := cac.OnStaleNames(); int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("on-stale(%d)", uint8(s))
}

// Charge is what each admitted call of a type costs, and for how many
// ticks. A zero Charge is a type with no charge line.
type Charge struct {
	Charge        uint32
	LifetimeTicks uint32
}

// CallAdmission is the Cisco charge budget as the fast path holds it:
// struct cac_admission. Charges are in thousandths.
type CallAdmission struct {
	LimitMilli    uint64 // 0: CAC not operational
	NewModel      bool
	CPULimitMilli uint32 // new model: CPU at or over this rejects; 0: no gate
	Charges       [cac.NumCallTypes]Charge
	OnStale       OnStale
	StaleAfterNS  uint64
	// Fleet makes the limit the fleet's: an admitted call with a charge
	// also spends charge × lifetime ticks of the lease
	// LeaseCallAdmission (docs/design.md, "Fleet").
	Fleet bool
}

// Operational reports whether a limit is set: without one, call admission
// admits every call.
func (ca CallAdmission) Operational() bool { return ca.LimitMilli != 0 }

// Inputs are the control plane's measurements: struct cac_inputs.
type Inputs struct {
	HeartbeatNS uint64 // monotonic time of the write; 0: no control plane
	LoadMilli   uint64 // load charge, thousandths
	CPUMilli    uint32 // CPU percent of the last interval, thousandths
	BuffersFull bool
	// CPUAverageMilli is the CPU over the load lifetime, the load charge's
	// Pcpu, in thousandths; shown, not used by the fast path.
	CPUAverageMilli uint32
}

// Milli converts a charge or a percent to the thousandths the fast path
// counts in, rounding to the nearest.
func Milli(v float64) uint64 {
	if v <= 0 {
		return 0
	}
	return uint64(v*1000 + 0.5)
}

func callAdmissionOf(cfg *config.Config) (CallAdmission, error) {
	var ca CallAdmission
	in := cfg.CallAdmission
	if in.Limit != nil {
		ca.LimitMilli = uint64(*in.Limit) * 1000
	}
	ca.NewModel = in.NewModel
	if in.CPULimit != nil {
		ca.CPULimitMilli = uint32(*in.CPULimit) * 1000
	}
	for name, ch := range in.Charges {
		t, err := cac.ParseCallType(name)
		if err != nil {
			return ca, fmt.Errorf("call-admission: %w", err)
		}
		ticks := uint64(ch.Lifetime / (TickNS * time.Nanosecond))
		if ticks < 1 || ticks > MaxLifetimeTicks {
			return ca, fmt.Errorf("call-admission: %s lifetime %v: want 1s to %v", name, ch.Lifetime, time.Duration(MaxLifetimeTicks*TickNS))
		}
		ca.Charges[t] = Charge{Charge: ch.Charge, LifetimeTicks: uint32(ticks)}
	}
	s := slices.Index(cac.OnStaleNames(), cfg.OnStale)
	if s < 0 && cfg.OnStale != "" {
		return ca, fmt.Errorf("on-stale %q: want one of %s", cfg.OnStale, strings.Join(cac.OnStaleNames(), ", "))
	}
	ca.OnStale = OnStale(max(s, 0))
	ca.StaleAfterNS = uint64(cfg.StaleAfter)
	ca.Fleet = cfg.CallAdmissionFleet && ca.Operational()
	return ca, nil
}

// Cost is what a call of type t spends of a fleet-scope limit's lease:
// its charge for each tick it is held; 0 for a type with no charge.
func (ca CallAdmission) Cost(t cac.CallType) uint64 {
	ch := ca.Charges[t]
	return uint64(ch.Charge) * uint64(ch.LifetimeTicks)
}

// ChargeRing is struct cac_charge_ring: the calls a type admitted, and the
// total at the start of each recent tick.
type ChargeRing struct {
	Total uint64
	Tick  uint64
	Snap  [RingTicks]uint64
}

// Advance writes the snapshots of the ticks up to tick, as charge_advance.
func (r *ChargeRing) Advance(tick uint64) {
	if tick <= r.Tick {
		return
	}
	for i := uint64(0); i < MaxLifetimeTicks && i < tick-r.Tick; i++ {
		r.Snap[(tick-i)&(RingTicks-1)] = r.Total
	}
	r.Tick = tick
}

// InForce is how many calls hold their charge at tick, for a lifetime.
func (r *ChargeRing) InForce(tick uint64, lifetime uint32) uint64 {
	then := r.Snap[(tick-uint64(lifetime)+1)&(RingTicks-1)]
	if r.Total > then {
		return r.Total - then
	}
	return 0
}

// SessionCharges are the charges in force at now, in thousandths, as the
// fast path sums them; the rings are advanced to now.
func SessionCharges(ca CallAdmission, rings *[cac.NumCallTypes]ChargeRing, now uint64) uint64 {
	tick := now / TickNS
	var used uint64
	for t, c := range ca.Charges {
		if c.Charge == 0 || c.LifetimeTicks == 0 || c.LifetimeTicks > MaxLifetimeTicks {
			continue
		}
		rings[t].Advance(tick)
		used += rings[t].InForce(tick, c.LifetimeTicks) * uint64(c.Charge) * 1000
	}
	return used
}
