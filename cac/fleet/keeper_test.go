package fleet

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// twinGranter grants from the Go twin of the script, on a clock the test
// moves: Redis as the keepers would see it, without the network.
type twinGranter struct {
	now     *time.Time
	buckets map[string]*GCRA
	down    bool
	boxes   map[string]bool
}

func (g *twinGranter) Reachable() (bool, error) { return !g.down, nil }

func (g *twinGranter) Renew(_ context.Context, box string, l Limit, want, back int64) (Grant, error) {
	if g.down {
		return Grant{}, errors.New("connection refused")
	}
	b := g.buckets[l.Name]
	if b == nil {
		b = &GCRA{}
		g.buckets[l.Name] = b
	}
	interval, tolerance, err := l.Micros()
	if err != nil {
		return Grant{}, err
	}
	g.boxes[box] = true
	now := g.now.UnixMicro()
	returned := b.GiveBack(now, interval, back)
	return Grant{Tokens: b.Grant(now, interval, tolerance, want), Members: len(g.boxes), Returned: returned}, nil
}

// onePool is a Pool of one lease, spent by the test as the fast path
// would.
type onePool struct {
	tokens int64
	short  uint64
}

func (p *onePool) Grant(_ uint32, n int64, _ time.Time) { p.tokens += n }
func (p *onePool) Expire(_ uint32, n int64) int64 {
	take := max(0, min(n, p.tokens))
	p.tokens -= take
	return take
}
func (p *onePool) Tokens(uint32) int64 { return p.tokens }
func (p *onePool) Short(uint32) uint64 { return p.short }

// call is one call at the fast path: it spends a token or is refused.
func (p *onePool) call() bool {
	if p.tokens > 0 {
		p.tokens--
		return true
	}
	p.short++
	return false
}

// simTick is the simulation's step: calls arrive and are counted per tick.
const simTick = 10 * time.Millisecond

// simulate runs boxes for d under offered (calls a second of each box
// at second s) and returns the calls admitted in all.
func simulate(t *testing.T, boxes int, d time.Duration, down func(time.Duration) bool, offered func(box int, at time.Duration) float64, onLost OnLost) (admitted int64, keepers []*Keeper) {
	t.Helper()
	perTick, keepers, _ := simulateTicks(t, boxes, d, down, offered, onLost)
	for _, n := range perTick {
		admitted += n
	}
	return admitted, keepers
}

// simulateTicks is simulate that returns the calls admitted in each tick,
// and the most tokens the leases held at once, with those expired and
// not yet given back: the H of the fleet's bound (docs/design.md,
// "Fleet").
func simulateTicks(t *testing.T, boxes int, d time.Duration, down func(time.Duration) bool, offered func(box int, at time.Duration) float64, onLost OnLost) (perTick []int64, keepers []*Keeper, held int64) {
	t.Helper()
	start := time.Unix(1_800_000_000, 0)
	now := start
	g := &twinGranter{now: &now, buckets: map[string]*GCRA{}, boxes: map[string]bool{}}
	lim := Limit{Name: "customer/acme", CPS: 100, Burst: 100}
	cfg := KeeperConfig{Lifetime: time.Second, Renew: 100 * time.Millisecond, LostAfter: 2 * time.Second, OnLost: onLost}
	pools := make([]*onePool, boxes)
	for i := range boxes {
		pools[i] = &onePool{}
		c := cfg
		c.Box = string(rune('a' + i))
		k := NewKeeper(c, g, pools[i], now)
		k.SetLimits([]Limit{lim}, []uint32{0})
		keepers = append(keepers, k)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const tick = simTick
	next := make([]time.Time, boxes) // each keeper's next renewal, as the daemon times it
	for at := time.Duration(0); at < d; at += tick {
		now = start.Add(at)
		g.down = down(at)
		// The renewals due by now, each at its own time and in the order
		// of their times: boxes apart are not stepped in a fixed order.
		var due []int
		for i := range keepers {
			if !now.Before(next[i]) {
				due = append(due, i)
			}
		}
		slices.SortFunc(due, func(a, b int) int { return next[a].Compare(next[b]) })
		tickAt := now
		for _, i := range due {
			if now = next[i]; now.Before(start) {
				now = start // a first renewal, due at once
			}
			keepers[i].Step(context.Background(), now)
			next[i] = keepers[i].NextRenewal(now)
		}
		now = tickAt
		var h int64
		for i, k := range keepers {
			hs := k.Holders()[0]
			h += pools[i].tokens + hs.Expired - hs.Returned
		}
		held = max(held, h)
		perTick = append(perTick, 0)
		for i, p := range pools {
			// Poisson-ish arrivals: the offered rate over the tick.
			n := offered(i, at) * tick.Seconds()
			calls := int(n)
			if rng.Float64() < n-float64(calls) {
				calls++
			}
			for range calls {
				if p.call() {
					perTick[len(perTick)-1]++
				}
			}
		}
	}
	return perTick, keepers, held
}

// mostIn is the most calls perTick admitted in any window of w.
func mostIn(perTick []int64, w time.Duration) int64 {
	n := int(w / simTick)
	var sum, most int64
	for i, c := range perTick {
		sum += c
		if i >= n {
			sum -= perTick[i-n]
		}
		most = max(most, sum)
	}
	return most
}

// TestKeepersHoldTheFleetLimit: ten keepers share cps 100, burst 100
// through the twin for 20 s of simulated time, the load even, on one box,
// or moving every 2 s: never more than rate × time + burst, and most of
// it.
func TestKeepersHoldTheFleetLimit(t *testing.T) {
	const d = 20 * time.Second
	bound := int64(100*d.Seconds() + 100)
	up := func(time.Duration) bool { return false }
	for _, c := range []struct {
		name    string
		offered func(int, time.Duration) float64
		least   float64
	}{
		{"even", func(int, time.Duration) float64 { return 20 }, 0.95},
		{"90% on one", func(b int, _ time.Duration) float64 {
			if b == 0 {
				return 180
			}
			return 20.0 / 9
		}, 0.95},
		{"moving", func(b int, at time.Duration) float64 {
			if b == int(at/(2*time.Second))%10 {
				return 200
			}
			return 0
		}, 0.90},
	} {
		got, _ := simulate(t, 10, d, up, c.offered, LostLocal)
		t.Logf("%s: %d admitted of a bound of %d (%.1f%%)", c.name, got, bound, 100*float64(got)/float64(bound))
		if got > bound {
			t.Errorf("%s: %d admitted, over the bound of %d", c.name, got, bound)
		}
		if float64(got) < c.least*float64(bound) {
			t.Errorf("%s: %d admitted, under %.0f%% of %d", c.name, got, 100*c.least, bound)
		}
	}
}

// TestKeepersWhenRedisIsGone: Redis gone from 5 s to 15 s. Closed admits
// nothing from LostAfter on; local and static keep admitting about the
// fleet's rate; all recover when Redis returns.
func TestKeepersWhenRedisIsGone(t *testing.T) {
	const d = 20 * time.Second
	down := func(at time.Duration) bool { return at >= 5*time.Second && at < 15*time.Second }
	even := func(int, time.Duration) float64 { return 20 }
	for _, c := range []struct {
		on       OnLost
		least    int64
		most     int64
		endState State
	}{
		// 5 s up (burst 100 + 500), 2 s of lost-after on what the
		// leases held, 8 s lost, 5 s up again, from a bucket that filled
		// up meanwhile (100 + 500). Local holds the fleet's rate while
		// lost; static the rate each box's leases last came at, which
		// its demand may not use in full.
		{LostClosed, 1200 - 50, 1200 + 60, StateFleet},
		{LostLocal, 1200 + 800 - 150, 1200 + 800 + 100, StateFleet},
		{LostStatic, 1200 + 400, 1200 + 800 + 100, StateFleet},
	} {
		got, keepers := simulate(t, 10, d, down, even, c.on)
		t.Logf("on-fleet-lost %s: %d admitted", c.on, got)
		if got < c.least || got > c.most {
			t.Errorf("on-fleet-lost %s: %d admitted, want %d to %d", c.on, got, c.least, c.most)
		}
		if s := keepers[0].Status().State; s != c.endState {
			t.Errorf("on-fleet-lost %s: ends %s, want %s", c.on, s, c.endState)
		}
	}
}

// TestEvenShares: ten boxes started together under the same demand, twice
// the fleet's rate, each get their even share within 20 %: their renewals
// drift apart (NextRenewal), where in phase the first to ask took the
// refill every time.
func TestEvenShares(t *testing.T) {
	_, keepers := simulate(t, 10, 20*time.Second, func(time.Duration) bool { return false },
		func(int, time.Duration) float64 { return 20 }, LostLocal)
	var sum int64
	for _, k := range keepers {
		sum += k.Holders()[0].Granted
	}
	even := float64(sum) / float64(len(keepers))
	for i, k := range keepers {
		got := k.Holders()[0].Granted
		t.Logf("box %d: granted %d (even share %.0f)", i, got, even)
		if float64(got) < 0.8*even || float64(got) > 1.2*even {
			t.Errorf("box %d was granted %d, over 20 %% from the even share %.0f", i, got, even)
		}
	}
}

// TestNextRenewal: renewals come Renew apart on average, each between a
// half and one and a half of it, and two keepers started together do not
// renew together.
func TestNextRenewal(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	cfg := KeeperConfig{Box: "a", Lifetime: time.Second, Renew: 100 * time.Millisecond, LostAfter: time.Second}
	a := NewKeeper(cfg, nil, &onePool{}, t0)
	cfg.Box = "b"
	b := NewKeeper(cfg, nil, &onePool{}, t0)
	at, same := t0, 0
	const n = 1000
	for range n {
		next := a.NextRenewal(at)
		if d := next.Sub(at); d < 50*time.Millisecond || d > 150*time.Millisecond {
			t.Fatalf("a renewal %v after the last, want 50 to 150 ms", d)
		}
		if b.NextRenewal(at).Equal(next) {
			same++
		}
		at = next
	}
	if mean := at.Sub(t0) / n; mean < 95*time.Millisecond || mean > 105*time.Millisecond {
		t.Errorf("renewals %v apart on average, want 100 ms", mean)
	}
	if same > 0 {
		t.Errorf("%d of %d renewals of two keepers fell together", same, n)
	}
}

// TestKeeperStartsWithMembers: a box started while Redis is unreachable
// divides the fleet's rate by the boxes its fleet last counted, which the
// daemon kept; knowing nothing, it took the whole fleet's rate, and ten
// boxes restarted together in an outage admitted ten times the rate.
func TestKeeperStartsWithMembers(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	run := func(members int) int64 {
		now := t0
		g := &twinGranter{now: &now, buckets: map[string]*GCRA{}, boxes: map[string]bool{}, down: true}
		p := &onePool{}
		cfg := KeeperConfig{Box: "a", Lifetime: time.Second, Renew: 100 * time.Millisecond, LostAfter: 2 * time.Second,
			OnLost: LostLocal, Members: members}
		k := NewKeeper(cfg, g, p, now)
		k.SetLimits([]Limit{{Name: "acme", CPS: 100, Burst: 100}}, []uint32{0})
		var admitted int64
		for at := time.Duration(0); at < 12*time.Second; at += 10 * time.Millisecond {
			now = t0.Add(at)
			if at%cfg.Renew == 0 {
				k.Step(context.Background(), now)
			}
			for range 2 { // 200 calls a second offered
				if p.call() && at >= 2*time.Second {
					admitted++
				}
			}
		}
		return admitted
	}
	alone, ten := run(0), run(10)
	t.Logf("10 s lost: %d admitted knowing no members, %d knowing ten", alone, ten)
	if ten < 90 || ten > 120 {
		t.Errorf("a box of ten admitted %d in 10 s lost, want about its share, 100", ten)
	}
	if alone < 900 {
		t.Errorf("a box alone admitted %d in 10 s lost, want about the fleet's 1,000", alone)
	}
}

// TestFleetBoundOverWindows: in any window of T seconds the fleet admits
// at most burst + rate × T + H, H being the most tokens its leases held at
// once (docs/design.md, "Fleet"): tokens held when the window opens may be
// spent in it beside what the bucket grants, and a token given back
// refills the bucket only after it left a lease unspent. Each load is
// checked over every window of 1 s and of 5 s: an even flood, a flood that
// stops and starts again (a full bucket and the leases of before), ten
// times the rate, and a load moving from box to box; with Redis up, and
// gone for 10 s under local, which adds one burst: Redis's bucket fills
// while the boxes grant the rate among themselves.
func TestFleetBoundOverWindows(t *testing.T) {
	const rate, burst = 100.0, 100.0
	up := func(time.Duration) bool { return false }
	gone := func(at time.Duration) bool { return at >= 5*time.Second && at < 15*time.Second }
	stopStart := func(each float64) func(int, time.Duration) float64 {
		return func(_ int, at time.Duration) float64 {
			if at%(5*time.Second) < 3*time.Second {
				return each
			}
			return 0
		}
	}
	for _, c := range []struct {
		name    string
		down    func(time.Duration) bool
		offered func(int, time.Duration) float64
		extra   float64 // bursts beyond the one of the bound
	}{
		{"even, twice the rate", up, func(int, time.Duration) float64 { return 20 }, 0},
		{"3 s on, 2 s off", up, stopStart(20), 0},
		{"3 s on, 2 s off, ten times the rate", up, stopStart(100), 0},
		{"moving", up, func(b int, at time.Duration) float64 {
			if b == int(at/(2*time.Second))%10 {
				return 200
			}
			return 0
		}, 0},
		{"Redis gone, local", gone, func(int, time.Duration) float64 { return 20 }, 1},
	} {
		ticks, _, held := simulateTicks(t, 10, 30*time.Second, c.down, c.offered, LostLocal)
		for _, w := range []time.Duration{time.Second, 5 * time.Second} {
			most := mostIn(ticks, w)
			bound := int64((1+c.extra)*burst+rate*w.Seconds()) + held
			t.Logf("%s: at most %d in %v, bound %d (H = %d)", c.name, most, w, bound, held)
			if most > bound {
				t.Errorf("%s: %d admitted in a window of %v, over the bound of %d", c.name, most, w, bound)
			}
		}
	}
}
