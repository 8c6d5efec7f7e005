package fleet

import (
	"fmt"
	"math"
	"strings"
)

// GCRA is the Go twin of gcra.lua: a generic cell rate algorithm whose state
// is its theoretical arrival time, in microseconds. The zero value, a TAT in
// the past, is a full bucket, as an absent key is in Redis.
type GCRA struct {
	TATMicros int64
}

// Grant takes up to want tokens at nowMicros from a bucket that refills one
// token every intervalMicros and holds toleranceMicros/intervalMicros + 1 of
// them, and returns how many it took (0 when none conform). It does the
// script's arithmetic exactly, in integers.
func (g *GCRA) Grant(nowMicros, intervalMicros, toleranceMicros, want int64) int64 {
	if want < 1 || intervalMicros < 1 || toleranceMicros < 0 {
		return 0
	}
	base := max(g.TATMicros, nowMicros)
	// The TAT may run at most tolerance ahead of now once the tokens are
	// taken: room is what lies between the two, in intervals.
	room := nowMicros + toleranceMicros + intervalMicros - base
	if room < intervalMicros {
		return 0
	}
	k := min(want, room/intervalMicros)
	g.TATMicros = base + k*intervalMicros
	return k
}

// GiveBack returns up to n tokens a box took back from its lease unspent,
// as the script's back does: the TAT moves back n intervals, never behind
// now, and it returns how many went back.
func (g *GCRA) GiveBack(nowMicros, intervalMicros, n int64) int64 {
	if n < 1 || intervalMicros < 1 || g.TATMicros <= nowMicros {
		return 0
	}
	back := min(n, (g.TATMicros-nowMicros)/intervalMicros)
	g.TATMicros -= back * intervalMicros
	return back
}

// Limit is a fleet-scope limit: CPS tokens a second over the whole fleet,
// at most Burst at once.
type Limit struct {
	Name       string
	CPS, Burst float64
}

// maxToleranceMicros keeps TAT and now + tolerance exact in a Lua double
// (below 2^53) for centuries to come: 2^50 µs is some 35 years of burst.
const maxToleranceMicros = 1 << 50

// Micros returns the limit as the script takes it: the interval a token is
// worth and the tolerance, both in microseconds. The interval is rounded up,
// so that a rate that is no whole number of microseconds is held slightly
// under, never over.
func (l Limit) Micros() (intervalMicros, toleranceMicros int64, err error) {
	if err := checkName("limit", l.Name); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(l.CPS) || l.CPS <= 0 || l.CPS > 1e6 {
		return 0, 0, fmt.Errorf("limit %q: cps %v: must be above 0 and at most 1e6 (one token a microsecond)", l.Name, l.CPS)
	}
	if math.IsNaN(l.Burst) || l.Burst < 1 {
		return 0, 0, fmt.Errorf("limit %q: burst %v: must be at least 1", l.Name, l.Burst)
	}
	intervalMicros = int64(math.Ceil(1e6 / l.CPS))
	tol := math.Floor((l.Burst - 1) * float64(intervalMicros))
	if tol > maxToleranceMicros {
		return 0, 0, fmt.Errorf("limit %q: burst %v at cps %v: the bucket would take over 2^50 µs to fill", l.Name, l.Burst, l.CPS)
	}
	return intervalMicros, int64(tol), nil
}

// checkName refuses names that would make a bad key: an empty one, or one
// with a brace, which could move the key out of its fleet's hash tag.
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", what)
	}
	if strings.ContainsAny(name, "{}") {
		return fmt.Errorf("%s name %q: must not contain { or }, they mark the Redis Cluster hash tag", what, name)
	}
	return nil
}
