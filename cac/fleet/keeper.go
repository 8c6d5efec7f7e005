package fleet

import (
	"context"
	"math"
	"time"
)

// Granter grants leases and takes back tokens unspent: a Client, or a
// test's stand-in.
type Granter interface {
	Renew(ctx context.Context, box string, l Limit, want, back int64) (Grant, error)
}

// OnLost is what a box does once Redis has been unreachable for
// KeeperConfig.LostAfter (docs/design.md, "Fleet").
type OnLost string

const (
	// LostLocal grants each limit locally at the fleet's rate over the
	// number of boxes last seen.
	LostLocal OnLost = "local"
	// LostStatic grants each limit locally at the rate its last leases
	// came at.
	LostStatic OnLost = "static"
	// LostClosed grants nothing and takes back what the leases hold.
	LostClosed OnLost = "closed"
)

// KeeperConfig is how a Keeper renews: every Renew, grants living
// Lifetime, and OnLost after LostAfter without Redis.
type KeeperConfig struct {
	Box                        string
	Lifetime, Renew, LostAfter time.Duration
	OnLost                     OnLost
}

// State is where a keeper's leases come from.
type State string

const (
	StateFleet       State = "fleet"       // from Redis
	StateUnreachable State = "unreachable" // Redis failed; leases run on what they hold
	StateLost        State = "lost"        // on-fleet-lost in force
)

// Keeper renews the leases of one box's fleet-scope limits.
type Keeper struct {
	cfg     KeeperConfig
	granter Granter
	pool    Pool
	holders []*Holder

	state   State
	lastOK  time.Time
	members int
	rtt     time.Duration
	lastErr error
	// Of each holder, by limit name: the rate leases came at (for
	// static) and the local bucket while lost.
	rates  map[string]float64
	locals map[string]*GCRA
	last   time.Time
}

// NewKeeper returns a keeper that starts at now, as if Redis had just
// answered: the first LostAfter is grace.
func NewKeeper(cfg KeeperConfig, g Granter, p Pool, now time.Time) *Keeper {
	return &Keeper{cfg: cfg, granter: g, pool: p, state: StateFleet, lastOK: now, members: 1,
		rates: map[string]float64{}, locals: map[string]*GCRA{}}
}

// SetLimits puts limits in force, each spending the lease of the same
// place in leases. A limit kept (the same name and lease) keeps its
// grants; the lease of one gone, or moved, is drained first, so no token
// granted for one limit is ever spent by another.
func (k *Keeper) SetLimits(limits []Limit, leases []uint32) {
	old := map[string]*Holder{}
	for _, h := range k.holders {
		old[h.Limit.Name] = h
	}
	var next []*Holder
	for i, l := range limits {
		if h, ok := old[l.Name]; ok && h.Lease == leases[i] {
			h.Limit = l
			next = append(next, h)
			delete(old, l.Name)
			continue
		}
		next = append(next, &Holder{Limit: l, Lease: leases[i]})
	}
	for _, h := range old {
		h.Drain(k.pool)
	}
	for _, h := range next { // a new holder's lease may hold what an earlier run left
		if h.Granted == 0 {
			h.Drain(k.pool)
			h.Expired = 0
		}
	}
	k.holders = next
}

// Holders are the leases in force.
func (k *Keeper) Holders() []*Holder { return k.holders }

// Status is what show fleet says of the keeper.
type Status struct {
	State   State
	LastOK  time.Time
	Members int
	RTT     time.Duration
	Err     error
}

// Status reports the keeper's state.
func (k *Keeper) Status() Status {
	return Status{State: k.state, LastOK: k.lastOK, Members: k.members, RTT: k.rtt, Err: k.lastErr}
}

// horizon is how far ahead a lease is sized: a renewal and a half, so a
// lost renewal leaves the lease spending, and a box holds little unspent.
func (k *Keeper) horizon() time.Duration { return k.cfg.Renew * 3 / 2 }

// Step is one renewal at now: it expires what outlived its lifetime and
// asks for what each lease's demand wants, from Redis or, once Redis has
// been gone for LostAfter, as OnLost says.
func (k *Keeper) Step(ctx context.Context, now time.Time) {
	dt := now.Sub(k.last).Seconds()
	k.last = now
	failed := false
	for _, h := range k.holders {
		h.Expire(k.pool, now)
		want := h.Want(k.pool, now, k.horizon())
		back := h.Expired - h.Returned
		got := int64(0)
		if !failed && (want > 0 || back > 0) {
			rctx, cancel := context.WithTimeout(ctx, k.cfg.Renew)
			g, err := k.granter.Renew(rctx, k.cfg.Box, h.Limit, max(0, want), back)
			cancel()
			// Given back even when the answer is lost: a request that
			// timed out may have run, and giving the same tokens back
			// twice would let the fleet admit more than its bound.
			// Tokens that did not go back are only lost.
			h.Returned += back
			if err == nil {
				k.state, k.lastOK, k.members, k.rtt, k.lastErr = StateFleet, now, max(1, g.Members), g.RTT, nil
				h.Add(k.pool, g.Tokens, now, k.cfg.Lifetime)
				got = g.Tokens
				delete(k.locals, h.Limit.Name)
			} else {
				failed, k.lastErr = true, err // the rest wait for the next step
			}
		}
		if failed {
			k.lost(h, want, now)
		} else if dt > 0 && dt < 10 {
			r := k.rates[h.Limit.Name]
			a := 1 - math.Exp(-dt/demandSmoothing.Seconds())
			k.rates[h.Limit.Name] = r + a*(float64(got)/dt-r)
		}
	}
}

// lost applies Redis's absence to h: nothing within LostAfter, then
// OnLost.
func (k *Keeper) lost(h *Holder, want int64, now time.Time) {
	if now.Sub(k.lastOK) < k.cfg.LostAfter {
		k.state = StateUnreachable
		return
	}
	k.state = StateLost
	var cps float64
	switch k.cfg.OnLost {
	case LostClosed:
		h.Drain(k.pool)
		return
	case LostStatic:
		cps = k.rates[h.Limit.Name]
	default:
		cps = h.Limit.CPS / float64(k.members)
	}
	if cps <= 0 || want <= 0 {
		return
	}
	l := Limit{Name: h.Limit.Name, CPS: cps, Burst: max(1, h.Limit.Burst/float64(k.members))}
	interval, tolerance, err := l.Micros()
	if err != nil {
		return
	}
	nowMicros := now.UnixMicro()
	g, ok := k.locals[h.Limit.Name]
	if !ok { // starts empty: the fleet may have spent its burst already
		g = &GCRA{TATMicros: nowMicros + tolerance}
		k.locals[h.Limit.Name] = g
	}
	h.Add(k.pool, g.Grant(nowMicros, interval, tolerance, want), now, k.cfg.Lifetime)
}
