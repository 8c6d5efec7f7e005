package fleet

import (
	"math"
	"time"
)

// Pool is where a box's leases live: the fast path's leases map as the
// daemon maps it (maps.Leases), or the reference model. Grant adds
// tokens that the fast path spends until expires and never after, Expire
// takes back up to n of those still there and says how many it took,
// Short counts the calls refused for want of a token.
type Pool interface {
	Grant(i uint32, n int64, expires time.Time)
	Expire(i uint32, n int64) int64
	Tokens(i uint32) int64
	Short(i uint32) uint64
}

// grant is a grant still within its lifetime.
type grant struct {
	n       int64
	expires time.Time
}

// Holder keeps a box's lease of one fleet-scope limit: the grants that
// have not expired, what the lease was granted, spent and lost to expiry,
// and the demand it sizes the next request to.
type Holder struct {
	Limit Limit
	Lease uint32 // its index in the pool

	grants []grant
	live   int64 // tokens of grants not yet expired
	// Granted and Expired are the tokens the lease was granted and the
	// tokens it lost to expiry since the holder began; what it spent is
	// the rest, less what the pool holds.
	Granted, Expired int64
	// Returned is the expired tokens given back to the fleet so far.
	Returned int64
	// GrantedLocal is the part of Granted the box granted itself while
	// the fleet was lost (on-fleet-lost local or static).
	GrantedLocal int64

	seen      bool
	lastSpent int64
	lastShort uint64
	lastTick  time.Time
	// Demand is calls a second the lease was asked for, spent or refused
	// for want of a token, smoothed over about a second.
	Demand float64
}

// demandSmoothing is the time constant of Demand: long enough to ride
// over the gaps of a bursty source, short enough that a load that moves
// to this box is followed within a few renewals.
const demandSmoothing = 500 * time.Millisecond

// Spent is the tokens the fast path has spent of the lease.
func (h *Holder) Spent(p Pool) int64 { return h.Granted - h.Expired - p.Tokens(h.Lease) }

// Expire takes back the tokens of grants whose lifetime is over: what the
// pool holds beyond the grants still live. The fast path spends the
// oldest first, as far as anyone can tell, so a token left is one of the
// newest; none is taken twice, and none a call is spending.
func (h *Holder) Expire(p Pool, now time.Time) {
	i := 0
	for ; i < len(h.grants) && !now.Before(h.grants[i].expires); i++ {
		h.live -= h.grants[i].n
	}
	h.grants = h.grants[i:]
	if over := p.Tokens(h.Lease) - h.live; over > 0 {
		h.Expired += p.Expire(h.Lease, over)
	}
	// The fast path spent the rest: off the oldest grants first, so that
	// a grant's count is the tokens of it still there.
	for over := h.live - max(0, p.Tokens(h.Lease)); over > 0 && len(h.grants) > 0; {
		take := min(over, h.grants[0].n)
		h.grants[0].n -= take
		h.live -= take
		over -= take
		if h.grants[0].n == 0 {
			h.grants = h.grants[1:]
		}
	}
}

// Drain takes back every token of the lease: on-fleet-lost closed, or a
// limit that is no longer in force.
func (h *Holder) Drain(p Pool) {
	h.grants, h.live = nil, 0
	h.Expired += p.Expire(h.Lease, math.MaxInt64)
}

// Add puts n granted tokens in the lease, to expire after lifetime.
func (h *Holder) Add(p Pool, n int64, now time.Time, lifetime time.Duration) {
	if n <= 0 {
		return
	}
	p.Grant(h.Lease, n, now.Add(lifetime))
	h.Granted += n
	h.live += n
	h.grants = append(h.grants, grant{n: n, expires: now.Add(lifetime)})
}

// Want updates the demand and returns how many tokens to ask for: what
// the demand would spend over horizon, less what the lease holds, and at
// least one while it holds none (an idle box must admit its first call),
// at most the limit's burst.
func (h *Holder) Want(p Pool, now time.Time, horizon time.Duration) int64 {
	spent, short := h.Spent(p), p.Short(h.Lease)
	if h.seen {
		if dt := now.Sub(h.lastTick).Seconds(); dt > 0 {
			calls := float64(max(0, spent-h.lastSpent)) + float64(short-h.lastShort)
			a := 1 - math.Exp(-dt/demandSmoothing.Seconds())
			h.Demand += a * (calls/dt - h.Demand)
		}
	}
	h.seen, h.lastSpent, h.lastShort, h.lastTick = true, spent, short, now
	holds := max(0, p.Tokens(h.Lease))
	want := int64(math.Ceil(h.Demand*horizon.Seconds())) - holds
	if holds == 0 {
		want = max(want, 1)
	}
	return min(want, int64(math.Max(1, h.Limit.Burst)))
}
