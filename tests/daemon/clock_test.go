package daemon

import (
	"os"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// wallClock moves CLOCK_REALTIME and puts it back, to the true time as
// the monotonic clock tells it, when the test ends however it ends.
type wallClock struct {
	base time.Time // with its monotonic reading
}

func newWallClock(t *testing.T) *wallClock {
	w := &wallClock{base: time.Now()}
	t.Cleanup(func() {
		if err := w.set(0); err != nil {
			t.Errorf("put the wall clock back: %v", err)
		}
	})
	return w
}

// set puts the wall clock off from the true time by off.
func (w *wallClock) set(off time.Duration) error {
	now := w.base.Round(0).Add(time.Since(w.base) + off)
	ts := unix.NsecToTimespec(now.UnixNano())
	return unix.ClockSettime(unix.CLOCK_REALTIME, &ts)
}

// TestClockJumps: the wall clock jumps an hour ahead, then an hour behind,
// under a running daemon. Buckets run on the monotonic clock, so the
// first jump refills nothing and the second empties nothing; the daemon's
// heartbeat keeps the fast path from going stale with on-stale: closed.
//
// It sets the machine's clock for a second or two, so it runs alone, in
// its own step of make test, which sets XDPCAC_CLOCK_JUMPS=1.
func TestClockJumps(t *testing.T) {
	if os.Getenv("XDPCAC_CLOCK_JUMPS") != "1" {
		t.Skip("sets the machine's clock: runs alone, in make test's own step, with XDPCAC_CLOCK_JUMPS=1")
	}
	tb := harness.NewTestbed(t)
	cfg := harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\n" +
		"cpu: {sample-interval: 200ms}\nstale-after: 1s\non-stale: closed\n" +
		"classes:\n  pppoe-padi: {cps: 2, burst: 4}\n" + harness.Ios("limit 100000", "pppoe 1 1")
	tb.StartDaemon(t, harness.WriteConfig(t, cfg))
	clock := newWallClock(t)

	// burst sends 10 PADIs and returns how many were admitted, and the
	// most that a bucket refilling at cps 2 since the burst before could
	// admit. The time between bursts is the sleep and the test's own
	// cacctl runs, so it is read on the fast path's clock, from the start
	// of that burst to the end of this one. The most is 2 a second of it,
	// plus the token begun before it, and never more than the burst of 4.
	var last uint64
	burst := func() (admitted, most uint64) {
		t.Helper()
		before := tb.Stats(t).Classes["pppoe-padi"]
		frames := make([][]byte, 10)
		for i := range frames {
			frames[i] = harness.Padi
		}
		start := control.MonotonicCoarse()
		testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
		most = min(4, uint64(2*time.Duration(control.MonotonicCoarse()-last).Seconds())+1)
		last = start
		testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == before.Seen+10 })
		after := tb.Stats(t).Classes["pppoe-padi"]
		if n := after.Reasons["stale"] - before.Reasons["stale"]; n > 0 {
			t.Errorf("%d PADIs rejected as stale", n)
		}
		return after.Admitted - before.Admitted, most
	}
	if n, _ := burst(); n < 4 || n > 5 {
		t.Fatalf("%d of 10 PADIs admitted before any jump, want the burst of 4", n)
	}

	if err := clock.set(time.Hour); err != nil {
		t.Fatalf("set the wall clock: %v", err)
	}
	if n, _ := burst(); n > 1 {
		t.Errorf("an hour's jump ahead admitted %d of 10 PADIs: the bucket refilled from the wall clock", n)
	}
	time.Sleep(1200 * time.Millisecond) // past stale-after
	if v := tb.CallAdmission(t); v.Stale || v.HeartbeatAgeMS == nil || *v.HeartbeatAgeMS > 1000 {
		t.Errorf("an hour's jump ahead: stale %v, heartbeat age %v ms", v.Stale, v.HeartbeatAgeMS)
	}
	if n, most := burst(); n < 2 || n > most {
		t.Errorf("1.2 s after the jump ahead %d PADIs admitted, want 2 to %d (cps 2)", n, most)
	}

	if err := clock.set(-time.Hour); err != nil {
		t.Fatalf("set the wall clock: %v", err)
	}
	time.Sleep(1200 * time.Millisecond)
	if v := tb.CallAdmission(t); v.Stale || v.HeartbeatAgeMS == nil || *v.HeartbeatAgeMS > 1000 {
		t.Errorf("an hour's jump behind: stale %v, heartbeat age %v ms", v.Stale, v.HeartbeatAgeMS)
	}
	if n, most := burst(); n < 2 || n > most {
		t.Errorf("1.2 s after the jump behind %d PADIs admitted, want 2 to %d: the bucket emptied on the wall clock", n, most)
	}
}
