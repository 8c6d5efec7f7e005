package daemon

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// vmHostname is the name tests/kernels/init gives the kernel VM.
const vmHostname = "xdpcac-kernels"

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
// It sets the machine's clock for some seconds, which a test may do only
// where the clock is its own: in the kernel VM of tests/kernels, whose
// init sets XDPCAC_CLOCK_JUMPS=1 and names the machine xdpcac-kernels;
// never on the host that runs make test (docs/design.md, "Testing").
// Elsewhere it skips, and tests/hostguard allows this file only. The VM
// may emulate its CPU, where every cacctl the test runs takes a good part
// of a second: the rate is low enough, a PADI every 4 s, that a bucket
// refilled from the wall clock (a burst of 4) still shows beside what the
// seconds between two bursts refill.
func TestClockJumps(t *testing.T) {
	if os.Getenv("XDPCAC_CLOCK_JUMPS") != "1" {
		t.Skip("sets the machine's clock: runs only in the kernel VM (make kernels), whose init sets XDPCAC_CLOCK_JUMPS=1")
	}
	if host, err := os.Hostname(); err != nil || host != vmHostname {
		t.Fatalf("XDPCAC_CLOCK_JUMPS=1 on %q, not the kernel VM (%s): this test sets the wall clock only there", host, vmHostname)
	}
	const cps, burstSize = 0.25, 4
	tb := harness.NewTestbed(t)
	cfg := harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\n" +
		"cpu: {sample-interval: 200ms}\nstale-after: 1s\non-stale: closed\n" +
		fmt.Sprintf("classes:\n  pppoe-padi: {cps: %g, burst: %d}\n", cps, burstSize) + harness.Ios("limit 100000", "pppoe 1 1")
	// Under TCG the verifier alone takes half a minute.
	tb.StartDaemonWithin(t, 3*time.Minute, harness.WriteConfig(t, cfg))
	clock := newWallClock(t)

	// burst sends 10 PADIs and returns how many were admitted, and the
	// most that a bucket refilling at cps since the burst before could
	// admit. The time between bursts is the sleep and the test's own
	// cacctl runs, so it is read on the fast path's clock, from the start
	// of that burst to the end of this one. The most is what cps refills
	// in it, plus the token begun before it, and never more than the burst.
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
		since := time.Duration(control.MonotonicCoarse() - last)
		most = min(burstSize, uint64(cps*since.Seconds())+1)
		last = start
		testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == before.Seen+10 })
		after := tb.Stats(t).Classes["pppoe-padi"]
		if n := after.Reasons["stale"] - before.Reasons["stale"]; n > 0 {
			t.Errorf("%d PADIs rejected as stale", n)
		}
		t.Logf("%d of 10 PADIs admitted, %.1fs after the burst before, at most %d", after.Admitted-before.Admitted, since.Seconds(), most)
		return after.Admitted - before.Admitted, most
	}
	if n, _ := burst(); n < burstSize || n > burstSize+1 {
		t.Fatalf("%d of 10 PADIs admitted before any jump, want the burst of %d", n, burstSize)
	}

	if err := clock.set(time.Hour); err != nil {
		t.Fatalf("set the wall clock: %v", err)
	}
	switch n, most := burst(); {
	case most >= burstSize:
		t.Fatalf("the bursts came too far apart to tell a refill from the wall clock: at most %d", most)
	case n > most:
		t.Errorf("an hour's jump ahead admitted %d of 10 PADIs, want at most %d: the bucket refilled from the wall clock", n, most)
	}
	// Past stale-after, and long enough for cps to refill 2 and a bit.
	refill := time.Duration(2.2 / cps * float64(time.Second))
	time.Sleep(refill)
	if v := tb.CallAdmission(t); v.Stale || v.HeartbeatAgeMS == nil || *v.HeartbeatAgeMS > 1000 {
		t.Errorf("an hour's jump ahead: stale %v, heartbeat age %v ms", v.Stale, v.HeartbeatAgeMS)
	}
	if n, most := burst(); n < 2 || n > most {
		t.Errorf("%v after the jump ahead %d PADIs admitted, want 2 to %d (cps %g)", refill, n, most, cps)
	}

	if err := clock.set(-time.Hour); err != nil {
		t.Fatalf("set the wall clock: %v", err)
	}
	time.Sleep(refill)
	if v := tb.CallAdmission(t); v.Stale || v.HeartbeatAgeMS == nil || *v.HeartbeatAgeMS > 1000 {
		t.Errorf("an hour's jump behind: stale %v, heartbeat age %v ms", v.Stale, v.HeartbeatAgeMS)
	}
	if n, most := burst(); n < 2 || n > most {
		t.Errorf("%v after the jump behind %d PADIs admitted, want 2 to %d: the bucket emptied on the wall clock", refill, n, most)
	}
}
