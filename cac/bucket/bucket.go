package bucket

import (
	"fmt"
	"math"
)

// Caps that keep now + tolerance and TAT + interval inside 64 bits for
// centuries of uptime: an interval of 1e12 ns is a rate of 0.001 cps.
const (
	MaxIntervalNS  = 1 << 40
	MaxToleranceNS = 1 << 61
)

// Limit is a bucket's rate and size in the fast path's terms: one call per
// IntervalNS, and a call conforms while the theoretical arrival time is at
// most ToleranceNS ahead of now. IntervalNS 0 means unlimited.
//
// Fleet marks a fleet-scope level (docs/design.md, "Fleet"): the fast
// path spends the lease its daemon holds of the fleet's limit, not a
// bucket of its own, and the rate is the whole fleet's, kept in Redis.
type Limit struct {
	IntervalNS  uint64
	ToleranceNS uint64
	Fleet       bool
}

// Unlimited is the limit of a level with no cps.
var Unlimited = Limit{}

// FromRate converts cps and a bucket of burst calls (burst >= 1).
func FromRate(cps, burst float64) (Limit, error) {
	if !(cps > 0) || math.IsInf(cps, 0) {
		return Limit{}, fmt.Errorf("cps must be a positive number, got %g", cps)
	}
	if !(burst >= 1) || math.IsInf(burst, 0) {
		return Limit{}, fmt.Errorf("burst must hold at least one call, got %g", burst)
	}
	interval := math.Round(1e9 / cps)
	tolerance := math.Round((burst - 1) * 1e9 / cps)
	if interval < 1 || interval > MaxIntervalNS || tolerance > MaxToleranceNS {
		return Limit{}, fmt.Errorf("cps %g with burst %g is out of range", cps, burst)
	}
	return Limit{IntervalNS: uint64(interval), ToleranceNS: uint64(tolerance)}, nil
}

// Bucket is a bucket's state: its theoretical arrival time. The zero
// Bucket is full.
//
// The fast path (bpf/bucket.h) takes with compare-and-swap when the bucket
// is idle and with an atomic add otherwise; on one CPU both come to what
// Take does here.
type Bucket struct {
	TATNS uint64
}

// normalize brings a TAT back to one interval past a full tolerance. In
// steady operation it never is further ahead; after new limits shrink a
// bucket, this makes it refill at the new rate instead of serving out the
// old backlog. It takes nothing: an empty bucket stays empty.
func (b *Bucket) normalize(l Limit, now uint64) {
	b.TATNS = min(b.TATNS, now+l.ToleranceNS+l.IntervalNS)
}

// Conforms reports whether a call at now would pass; it takes nothing.
func (b *Bucket) Conforms(l Limit, now uint64) bool { return b.ConformsLeaving(l, 0, now) }

// ConformsLeaving is Conforms for a call that must leave reserveNS of the
// tolerance in the bucket: one bucket, two thresholds, so that the calls
// that may take the reserve have strict priority over those that may not.
func (b *Bucket) ConformsLeaving(l Limit, reserveNS, now uint64) bool {
	if l.IntervalNS == 0 {
		return true
	}
	b.normalize(l, now)
	return b.TATNS <= now+l.ToleranceNS-min(reserveNS, l.ToleranceNS)
}

// Take takes one call's worth if the call conforms.
func (b *Bucket) Take(l Limit, now uint64) bool { return b.TakeLeaving(l, 0, now) }

// TakeLeaving is Take for a call that must leave reserveNS.
func (b *Bucket) TakeLeaving(l Limit, reserveNS, now uint64) bool {
	if l.IntervalNS == 0 {
		return true
	}
	if !b.ConformsLeaving(l, reserveNS, now) {
		return false
	}
	b.TATNS = max(b.TATNS, now) + l.IntervalNS
	return true
}

// GiveBack returns a call taken by Take.
func (b *Bucket) GiveBack(l Limit) {
	if l.IntervalNS != 0 {
		b.TATNS -= l.IntervalNS
	}
}

// Tokens is how many calls the bucket holds at now, with a fraction for
// the next one refilling, and how many it holds when full: with TAT at or
// behind now it is full; each interval TAT stands ahead of now is one call
// taken.
func (b Bucket) Tokens(l Limit, now uint64) (tokens, burst float64) {
	if l.IntervalNS == 0 {
		return 0, 0
	}
	burst = float64(l.ToleranceNS)/float64(l.IntervalNS) + 1
	b.normalize(l, now)
	if b.TATNS <= now {
		return burst, burst
	}
	return max(0, burst-float64(b.TATNS-now)/float64(l.IntervalNS)), burst
}
