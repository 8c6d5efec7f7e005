package fleet

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestGCRASeedVector is the design's seed vector: cps 1, burst 60, starting
// full, 50 tokens wanted one at a time within 5 s all pass; the bucket then
// holds what is left of its 60 plus the 5 s of refill, and no more.
func TestGCRASeedVector(t *testing.T) {
	interval, tolerance, err := Limit{Name: "seed", CPS: 1, Burst: 60}.Micros()
	if err != nil {
		t.Fatal(err)
	}
	if interval != 1_000_000 || tolerance != 59_000_000 {
		t.Fatalf("Micros = %d, %d; want 1000000, 59000000", interval, tolerance)
	}
	const start = int64(1_764_000_000_000_000) // a 2025 clock in µs, as TIME gives
	var g GCRA
	for i := range int64(50) {
		now := start + i*100_000 // 50 in 4.9 s
		if k := g.Grant(now, interval, tolerance, 1); k != 1 {
			t.Fatalf("token %d at +%d ms: granted %d, want 1", i+1, (now-start)/1000, k)
		}
	}
	// At +5 s: 10 of the burst are left and 5 s have refilled 5.
	now := start + 5_000_000
	if k := g.Grant(now, interval, tolerance, 100); k != 15 {
		t.Fatalf("at +5 s wanting 100: granted %d, want 15", k)
	}
	if k := g.Grant(now, interval, tolerance, 1); k != 0 {
		t.Fatalf("empty bucket granted %d", k)
	}
	// One more a second, exactly on the second and not before.
	if k := g.Grant(now+999_999, interval, tolerance, 1); k != 0 {
		t.Fatalf("at +5.999999 s: granted %d, want 0", k)
	}
	if k := g.Grant(now+1_000_000, interval, tolerance, 5); k != 1 {
		t.Fatalf("at +6 s: granted %d, want 1", k)
	}
}

// TestGCRAFull: a full bucket grants burst at once, the zero GCRA is full,
// and an idle bucket fills no further than burst.
func TestGCRAFull(t *testing.T) {
	interval, tolerance, err := Limit{Name: "l", CPS: 100, Burst: 20}.Micros()
	if err != nil {
		t.Fatal(err)
	}
	var g GCRA
	if k := g.Grant(1e15, interval, tolerance, 1000); k != 20 {
		t.Fatalf("full bucket granted %d, want the burst 20", k)
	}
	if k := g.Grant(1e15+3600e6, interval, tolerance, 1000); k != 20 {
		t.Fatalf("after an hour idle: granted %d, want the burst 20", k)
	}
	if k := g.Grant(1e15+3600e6, interval, tolerance, 0); k != 0 {
		t.Fatalf("want 0 granted %d", k)
	}
}

// TestGCRABound is the property the fleet relies on: whatever the wants and
// the times, the total granted is at most rate × elapsed + burst, and the
// TAT never runs more than tolerance + interval ahead of now.
func TestGCRABound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		l := Limit{Name: "p", CPS: 0.5 + r.Float64()*2000, Burst: 1 + math.Floor(r.Float64()*200)}
		interval, tolerance, err := l.Micros()
		if err != nil {
			t.Fatal(err)
		}
		first := int64(1.7e15) + r.Int64N(1e14)
		// Any state a grant before first could have left behind.
		g := GCRA{TATMicros: r.Int64N(first + tolerance + interval + 1)}
		now := first
		var total int64
		for range 200 {
			want := 1 + r.Int64N(50)
			k := g.Grant(now, interval, tolerance, want)
			if k < 0 || k > want {
				t.Fatalf("trial %d: granted %d of %d", trial, k, want)
			}
			total += k
			// Integers: total ≤ (elapsed + tolerance + interval) / interval,
			// which is rate × elapsed + burst in the limit's own units.
			if total*interval > now-first+tolerance+interval {
				t.Fatalf("trial %d (%+v): %d granted in %d µs, over rate × elapsed + burst", trial, l, total, now-first)
			}
			if g.TATMicros > now+tolerance+interval {
				t.Fatalf("trial %d: TAT %d µs ahead of now", trial, g.TATMicros-now)
			}
			now += r.Int64N(3 * interval)
		}
	}
}

// TestLimitMicros: the interval rounds up, so that the rate is held under,
// and bad limits are refused with their reason.
func TestLimitMicros(t *testing.T) {
	interval, tolerance, err := Limit{Name: "x", CPS: 3, Burst: 2}.Micros()
	if err != nil || interval != 333_334 || tolerance != 333_334 {
		t.Fatalf("cps 3 burst 2: %d, %d, %v; want 333334, 333334", interval, tolerance, err)
	}
	for _, c := range []struct {
		l    Limit
		want string
	}{
		{Limit{Name: "", CPS: 1, Burst: 1}, "limit name is empty"},
		{Limit{Name: "a{b}", CPS: 1, Burst: 1}, "must not contain {"},
		{Limit{Name: "a", CPS: 0, Burst: 1}, "cps 0"},
		{Limit{Name: "a", CPS: -1, Burst: 1}, "cps -1"},
		{Limit{Name: "a", CPS: math.NaN(), Burst: 1}, "cps NaN"},
		{Limit{Name: "a", CPS: 2e6, Burst: 1}, "at most 1e6"},
		{Limit{Name: "a", CPS: 1, Burst: 0.5}, "burst 0.5"},
		{Limit{Name: "a", CPS: 1, Burst: math.NaN()}, "burst NaN"},
		{Limit{Name: "a", CPS: 1e-3, Burst: 1e9}, "2^50"},
	} {
		if _, _, err := c.l.Micros(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one saying %q", c.l, err, c.want)
		}
	}
}

// TestNewRefuses: bad options are refused before any dial.
func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Addresses: []string{"/x.sock"}}, "fleet name is empty"},
		{Options{Fleet: "f}", Addresses: []string{"/x.sock"}}, "must not contain {"},
		{Options{Fleet: "f"}, "no Redis address"},
		{Options{Fleet: "f", Addresses: []string{""}}, "empty Redis address"},
		{Options{Fleet: "f", Addresses: []string{"unix:"}}, "no socket path"},
		{Options{Fleet: "f", Addresses: []string{"a:1", "/x.sock"}}, "only as the one address"},
		{Options{Fleet: "f", Addresses: []string{"a:1", "b:1"}, DB: 2}, "only db 0"},
		{Options{Fleet: "f", Addresses: []string{"/x.sock"}, Staleness: -time.Second}, "negative"},
	} {
		if cl, err := New(c.o); err == nil {
			cl.Close()
			t.Errorf("%+v: no error", c.o)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one saying %q", c.o, err, c.want)
		}
	}
}

// TestGrantRefuses: a bad request fails before it reaches Redis (the socket
// here does not exist).
func TestGrantRefuses(t *testing.T) {
	c, err := New(Options{Fleet: "f", Addresses: []string{"unix:" + t.TempDir() + "/none.sock"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	ok := Limit{Name: "l", CPS: 1, Burst: 1}
	for _, c2 := range []struct {
		box  string
		l    Limit
		want int64
		msg  string
	}{
		{"", ok, 1, "box name is empty"},
		{"b", ok, 0, "want 0"},
		{"b", Limit{Name: "l", CPS: 0, Burst: 1}, 1, "cps 0"},
		{"b", Limit{Name: "{l}", CPS: 1, Burst: 1}, 1, "must not contain {"},
	} {
		if _, err := c.Grant(ctx, c2.box, c2.l, c2.want); err == nil || !strings.Contains(err.Error(), c2.msg) {
			t.Errorf("Grant(%q, %+v, %d): err %v, want one saying %q", c2.box, c2.l, c2.want, err, c2.msg)
		}
	}
}

// TestKeys: one fleet's keys share one hash tag, so one Cluster slot.
func TestKeys(t *testing.T) {
	if got := tatKey("acme", "cps"); got != "xdpcac:{acme}:tat:cps" {
		t.Errorf("tatKey = %q", got)
	}
	if got := membersKey("acme"); got != "xdpcac:{acme}:members" {
		t.Errorf("membersKey = %q", got)
	}
}
