package fleet_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestFleetWindowsLive: three boxes on one Redis at twice the fleet's
// rate (cps 100, burst 100): a flood, a pause, a flood, with one box's
// daemon SIGSTOPped for 5 s just as the first flood ends, its lease full.
// Over every window of 1 s and of 5 s the fleet admits at most burst +
// rate × T + H, H the most the leases held at once (docs/design.md,
// "Fleet"): the stopped daemon's lease runs out by itself, and tokens
// that came back to Redis refill its bucket only after they left a lease.
func TestFleetWindowsLive(t *testing.T) {
	testenv.RequireBPF(t)
	r := newRedis(t)
	boxes := startBoxes(t, 3, r.sock, "local")
	time.Sleep(2 * time.Second)
	s := sample(t, boxes)
	mostHeld := watchHeld(t, boxes)
	const d = 13 * time.Second
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		time.Sleep(3 * time.Second) // as the first flood ends
		boxes[0].d.Signal(syscall.SIGSTOP)
		time.Sleep(5 * time.Second)
		boxes[0].d.Signal(syscall.SIGCONT)
	}()
	t.Cleanup(func() { boxes[0].d.Signal(syscall.SIGCONT) })
	fleetRun(t, boxes, d, func(_ int, at time.Duration) float64 {
		if at >= 3*time.Second && at < 5*time.Second {
			return 0 // the pause
		}
		return 67
	})
	s.end()
	held := mostHeld()
	<-stopped
	for _, w := range []time.Duration{time.Second, 5 * time.Second} {
		most := 0.0
		for at := time.Duration(0); at+w <= d; at += 100 * time.Millisecond {
			most = max(most, s.rate(at, at+w, all)*w.Seconds())
		}
		bound := 100 + 100*w.Seconds() + float64(held)
		t.Logf("flood, pause, flood, one daemon stopped 5 s: the most in any %v %.0f, bound %.0f (H = %d)", w, most, bound, held)
		if most > bound {
			t.Errorf("%.0f admitted in %v, over the bound %.0f", most, w, bound)
		}
	}
}
