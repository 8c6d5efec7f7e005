package fleet

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Granter grants leases and takes back tokens unspent: a Client, or a
// test's stand-in. Reachable reports whether Redis answers again after
// the keeper held it unreachable, and else why not (nil: no answer yet);
// the keeper asks no renewal until then.
type Granter interface {
	Renew(ctx context.Context, box string, l Limit, want, back int64) (Grant, error)
	Reachable() (bool, error)
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
	// Members is the number of boxes the fleet last counted, kept by the
	// daemon across restarts: until Redis answers, on-fleet-lost local
	// divides the rate by it. 0 is one box, all the daemon knows.
	Members int
}

// State is where a keeper's leases come from.
type State string

const (
	StateFleet       State = "fleet"       // from Redis
	StateUnreachable State = "unreachable" // Redis failed; leases run on what they hold
	StateLost        State = "lost"        // on-fleet-lost in force
)

// Keeper renews the leases of one box's fleet-scope limits. Its methods
// are safe for concurrent use: Step holds its lock only between requests
// to Redis, never across one, so that Read (show fleet, a scrape) never
// waits on Redis (docs/design.md, "Fleet").
type Keeper struct {
	cfg     KeeperConfig
	granter Granter
	pool    Pool

	mu      sync.Mutex // guards what follows
	holders []*Holder

	state   State
	lastOK  time.Time // the last renewal Redis answered, or the start
	renewed time.Time // the last renewal Redis answered; zero before one
	// answered and failed count the requests to Redis by how they ended.
	answered, failed uint64
	members          int
	rtt              time.Duration
	lastErr          error
	// Of each holder, by limit name: the rate leases came at (for
	// static) and the local bucket while lost.
	rates  map[string]float64
	locals map[string]*GCRA
	last   time.Time
	// rng draws the time to each next renewal (NextRenewal).
	rng *rand.Rand
}

// NewKeeper returns a keeper that starts at now, as if Redis had just
// answered: the first LostAfter is grace.
func NewKeeper(cfg KeeperConfig, g Granter, p Pool, now time.Time) *Keeper {
	h := fnv.New64a()
	h.Write([]byte(cfg.Box))
	return &Keeper{cfg: cfg, granter: g, pool: p, state: StateFleet, lastOK: now, members: max(1, cfg.Members),
		rates: map[string]float64{}, locals: map[string]*GCRA{},
		rng: rand.New(rand.NewPCG(h.Sum64(), uint64(now.UnixNano())))}
}

// NextRenewal is when the renewal after one at now is due: Renew on
// average, each drawn between a half and one and a half of it. The GCRA
// serves whoever asks first; boxes that renewed in phase (started
// together, as after an outage) asked in the same order every time, and
// the first took the refill while the last got nothing (80/10/10 under
// even demand). Drawn afresh each time, the order changes every renewal,
// and under even demand each box gets its even share.
func (k *Keeper) NextRenewal(now time.Time) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return now.Add(time.Duration(float64(k.cfg.Renew) * (0.5 + k.rng.Float64())))
}

// SetLimits puts limits in force, each spending the lease of the same
// place in leases. A limit kept (the same name and lease) keeps its
// grants; the lease of one gone, or moved, is drained first, so no token
// granted for one limit is ever spent by another.
func (k *Keeper) SetLimits(limits []Limit, leases []uint32) {
	k.mu.Lock()
	defer k.mu.Unlock()
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

// Holders are the leases in force. Their figures change with each Step:
// read them within Read.
func (k *Keeper) Holders() []*Holder {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.holders
}

// Read calls fn with the keeper's status and leases, which no Step
// changes until fn returns; fn must not keep them. It never waits on
// Redis.
func (k *Keeper) Read(fn func(Status, []*Holder)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fn(k.statusLocked(), k.holders)
}

// DrainAll takes back every token of every lease: no level spends a lease
// no one renews.
func (k *Keeper) DrainAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, h := range k.holders {
		h.Drain(k.pool)
	}
}

// Status is what show fleet says of the keeper.
type Status struct {
	State State
	// LastOK is when Redis last answered, or when the keeper started
	// (its grace); Renewed the same, zero until Redis has answered.
	LastOK, Renewed time.Time
	// Answered and Failed count the requests to Redis since the keeper
	// began, by how they ended.
	Answered, Failed uint64
	Members          int
	RTT              time.Duration
	Err              error
}

// Status reports the keeper's state.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.statusLocked()
}

func (k *Keeper) statusLocked() Status {
	return Status{State: k.state, LastOK: k.lastOK, Renewed: k.renewed, Answered: k.answered, Failed: k.failed,
		Members: k.members, RTT: k.rtt, Err: k.lastErr}
}

// horizon is how far ahead a lease is sized: a renewal and a half, so a
// lost renewal leaves the lease spending, and a box holds little unspent.
func (k *Keeper) horizon() time.Duration { return k.cfg.Renew * 3 / 2 }

// request is one lease's renewal: what Step asks Redis for it, and what
// came back.
type request struct {
	h          *Holder
	want, back int64
	asked      bool // sent, whatever came of it
	g          Grant
	err        error
}

// Step is one renewal at now: it expires what outlived its lifetime and
// asks for what each lease's demand wants, from Redis or, once Redis has
// been gone for LostAfter, as OnLost says. It asks Redis without the
// keeper's lock, each request within Renew, and stops asking at the first
// that fails; grants are stamped when their answer came, not at now, so
// that a slow answer does not bring tokens that are born expired.
func (k *Keeper) Step(ctx context.Context, now time.Time) {
	k.mu.Lock()
	reqs := make([]request, 0, len(k.holders))
	for _, h := range k.holders {
		h.Expire(k.pool, now)
		reqs = append(reqs, request{h: h, want: h.Want(k.pool, now, k.horizon()), back: h.Expired - h.Returned})
	}
	// An unreachable Redis is asked nothing until it answers a PING
	// (Granter.Reachable): renewals that time out pile up in it.
	ask := k.state == StateFleet
	k.mu.Unlock()
	var why error // what a probe of an unreachable Redis met
	if !ask {
		ask, why = k.granter.Reachable()
	}

	start := time.Now()
	for i := range reqs {
		if !ask {
			break
		}
		r := &reqs[i]
		if r.want <= 0 && r.back <= 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, k.cfg.Renew)
		r.g, r.err = k.granter.Renew(rctx, k.cfg.Box, r.h.Limit, max(0, r.want), r.back)
		cancel()
		r.asked = true
		if r.err != nil {
			break // the rest wait for the next step
		}
	}
	answered := now.Add(time.Since(start))

	k.mu.Lock()
	defer k.mu.Unlock()
	dt := now.Sub(k.last).Seconds()
	k.last = now
	live := map[*Holder]bool{}
	for _, h := range k.holders {
		live[h] = true
	}
	failed := !ask // Redis is still unreachable: as a failure, with nothing asked
	if why != nil {
		k.lastErr = why
	}
	for _, r := range reqs {
		if !live[r.h] {
			continue // its limit left meanwhile (SetLimits drained it): its grant is lost
		}
		if r.asked {
			// Given back even when the answer is lost: a request that
			// timed out may have run, and giving the same tokens back
			// twice would let the fleet admit more than its bound.
			// Tokens that did not go back are only lost.
			r.h.Returned += r.back
		}
		got := int64(0)
		if r.asked && r.err == nil {
			k.answered++
			k.state, k.lastOK, k.renewed, k.members, k.rtt, k.lastErr = StateFleet, now, now, max(1, r.g.Members), r.g.RTT, nil
			r.h.Add(k.pool, r.g.Tokens, answered, k.cfg.Lifetime)
			got = r.g.Tokens
			delete(k.locals, r.h.Limit.Name)
		} else if r.asked {
			k.failed++
			failed, k.lastErr = true, r.err
			if errors.Is(r.err, ErrNotReplicated) && r.g.Members > 0 {
				// The fleet answered, if not in time for its replicas:
				// local divides the rate by the boxes it counted.
				k.members = r.g.Members
			}
		}
		if failed {
			k.lost(r.h, r.want, answered)
		} else if dt > 0 && dt < 10 {
			rate := k.rates[r.h.Limit.Name]
			a := 1 - math.Exp(-dt/demandSmoothing.Seconds())
			k.rates[r.h.Limit.Name] = rate + a*(float64(got)/dt-rate)
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
	n := g.Grant(nowMicros, interval, tolerance, want)
	h.Add(k.pool, n, now, k.cfg.Lifetime)
	h.GrantedLocal += n
}
