package bench

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"golang.org/x/sys/unix"
)

// TestRejectSweepRace: two CPUs reject the same new sources at once while
// the clock moves on and a sweeper takes finished seconds out as the
// daemon does. Every reject is in exactly one swept record: none lost to
// an insert another CPU made first, none added to a record already taken
// out, none counted twice.
func TestRejectSweepRace(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 0.001, 1)
	f.SetPolicy(t, p)
	const sources = 300
	frames := make([][]byte, sources)
	for i := range frames {
		frames[i] = harness.InviteFrom(netip.AddrFrom4([4]byte{198, 51, 100 + byte(i>>8), byte(i)}), f.NextCall())
	}
	var clock atomic.Uint64
	setClock := func(ns uint64) {
		if err := f.Objs.TestClock.Update(uint32(0), ns, ebpf.UpdateAny); err != nil {
			t.Error(err)
		}
		clock.Store(ns) // after the program can read it: the sweep is never ahead
	}
	setClock(uint64(time.Second))

	var stop atomic.Bool
	var runs [2]uint64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for cpu := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // and never unlocked: the thread ends pinned
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs <- err
				return
			}
			for i := 0; !stop.Load(); i++ {
				if _, err := f.Objs.XdpCac.Run(&ebpf.RunOptions{Data: frames[i%sources]}); err != nil {
					errs <- err
					return
				}
				runs[cpu]++
			}
		}()
	}
	// The clock moves 50 ms every 10 ms; the sweeper sweeps all along.
	var swept []maps.Reject
	deadline := time.Now().Add(1500 * time.Millisecond)
	for now := uint64(time.Second); time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		now += uint64(50 * time.Millisecond)
		setClock(now)
		recs, err := maps.SweepRejects(maps.RejectTablesOf(&f.Objs.XdpMaps), clock.Load(), false)
		if err != nil {
			t.Fatal(err)
		}
		swept = append(swept, recs...)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rest, err := maps.SweepRejects(maps.RejectTablesOf(&f.Objs.XdpMaps), clock.Load(), true)
	if err != nil {
		t.Fatal(err)
	}
	finished := len(swept)
	swept = append(swept, rest...)

	var sum uint64
	seen := map[string]bool{}
	for _, r := range swept {
		sum += r.Count
		k := fmt.Sprintf("%s %d", r.Source, r.Second)
		if seen[k] {
			t.Errorf("two records of %s", k)
		}
		seen[k] = true
	}
	inv := f.Stats(t).Classes[cac.SIPInvite]
	rejected := inv.Rejected[cac.ReasonClass]
	t.Logf("%d + %d runs, %d rejected, %d records swept while running and %d at the end, over %d s of the clock",
		runs[0], runs[1], rejected, finished, len(rest), clock.Load()/uint64(time.Second))
	if runs[0] == 0 || runs[1] == 0 || finished == 0 {
		t.Fatalf("no race: %d and %d runs, %d records swept while running", runs[0], runs[1], finished)
	}
	// The admitted INVITE's copies pass as its retransmissions.
	if inv.Admitted+rejected != runs[0]+runs[1] || inv.Admitted > 11 || sum != rejected {
		t.Errorf("records count %d rejects, the counters %d rejected and %d admitted, of %d runs",
			sum, rejected, inv.Admitted, runs[0]+runs[1])
	}
}
