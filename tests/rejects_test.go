package tests

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
	"golang.org/x/sys/unix"
)

// TestRejectRecords: rejects are counted per source, class, reason and
// second; a sweep takes out the records of finished seconds, each once,
// whether or not their source is rejected again, and leaves the rest.
func TestRejectRecords(t *testing.T) {
	f := newFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = mustRate(t, 0.001, 1)
	f.setPolicy(t, p)
	// Calls from a and b, each INVITE a call of its own.
	a, b := netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("203.0.113.2")
	run := func(at time.Duration, srcs ...netip.Addr) {
		t.Helper()
		if err := f.at(uint64(at)); err != nil {
			t.Fatal(err)
		}
		for _, src := range srcs {
			if err := f.check(inviteFrom(src, f.nextCall())); err != nil {
				t.Fatal(err)
			}
		}
	}
	byKey := func(recs []maps.Reject) map[string]maps.Reject {
		out := map[string]maps.Reject{}
		for _, r := range recs {
			k := fmt.Sprintf("%s %v %v %d", r.Source, r.Class, r.Reason, r.Second)
			if _, dup := out[k]; dup {
				t.Errorf("two records of %s", k)
			}
			out[k] = r
		}
		return out
	}
	table := func() map[string]maps.Reject {
		t.Helper()
		recs, err := maps.ReadRejects(f.objs.Rejects)
		if err != nil {
			t.Fatal(err)
		}
		return byKey(recs)
	}
	sweep := func(at time.Duration, all bool) map[string]maps.Reject {
		t.Helper()
		recs, err := maps.SweepRejects(f.objs.Rejects, uint64(at), all)
		if err != nil {
			t.Fatal(err)
		}
		return byKey(recs)
	}
	const a1, b1, a2 = "203.0.113.1 sip-invite class 1", "203.0.113.2 sip-invite class 1", "203.0.113.1 sip-invite class 2"

	run(time.Second, a, a, a, a, a, a, b, b, b) // one admitted, then 5 + 3 rejected
	if recs := table(); len(recs) != 2 || recs[a1].Count != 5 || recs[b1].Count != 3 {
		t.Fatalf("records after the first second: %+v", recs)
	}
	run(2500*time.Millisecond, a, a)
	if recs := table(); len(recs) != 3 || recs[a1].Count != 5 || recs[a2].Count != 2 || recs[a2].FirstNS != uint64(2500*time.Millisecond) {
		t.Errorf("records with a second second: %+v", recs)
	}
	// Second 1 is finished once second 2 is over too.
	if got := sweep(2999*time.Millisecond, false); len(got) != 0 {
		t.Errorf("swept before second 2 was over: %+v", got)
	}
	got := sweep(3*time.Second, false)
	if len(got) != 2 || got[a1].Count != 5 || got[b1].Count != 3 || got[b1].FirstNS != uint64(time.Second) {
		t.Errorf("swept at 3 s: %+v, want second 1 of a (5) and b (3)", got)
	}
	if again := sweep(3*time.Second, false); len(again) != 0 {
		t.Errorf("swept twice: %+v", again)
	}
	if recs := table(); len(recs) != 1 || recs[a2].Count != 2 {
		t.Errorf("the table after the sweep: %+v, want second 2 of a alone", recs)
	}
	// A reject of a swept second (a clock the sweep was ahead of) makes a
	// record of its own: nothing is added to a record already written.
	if last := sweep(3*time.Second, true); len(last) != 1 || last[a2].Count != 2 {
		t.Errorf("swept all: %+v", last)
	}
	if recs := table(); len(recs) != 0 {
		t.Errorf("the table after sweeping all: %+v", recs)
	}
}

// TestRejectSweepRace: two CPUs reject the same new sources at once while
// the clock moves on and a sweeper takes finished seconds out as the
// daemon does. Every reject is in exactly one swept record: none lost to
// an insert another CPU made first, none added to a record already taken
// out, none counted twice.
func TestRejectSweepRace(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	f := newFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = mustRate(t, 0.001, 1)
	f.setPolicy(t, p)
	const sources = 300
	frames := make([][]byte, sources)
	for i := range frames {
		frames[i] = inviteFrom(netip.AddrFrom4([4]byte{198, 51, 100 + byte(i>>8), byte(i)}), f.nextCall())
	}
	var clock atomic.Uint64
	setClock := func(ns uint64) {
		if err := f.objs.TestClock.Update(uint32(0), ns, ebpf.UpdateAny); err != nil {
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
				if _, err := f.objs.XdpCac.Run(&ebpf.RunOptions{Data: frames[i%sources]}); err != nil {
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
		recs, err := maps.SweepRejects(f.objs.Rejects, clock.Load(), false)
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
	rest, err := maps.SweepRejects(f.objs.Rejects, clock.Load(), true)
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
	inv := f.stats(t).Classes[cac.SIPInvite]
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

// TestRejectRecordBudget: past 1,024 new records on a CPU in a second,
// further rejects count in one "other sources" record, and no count is lost.
func TestRejectRecordBudget(t *testing.T) {
	// The budget is per CPU: stay on one. The thread stays locked, so it
	// ends with the test instead of going back pinned to one CPU.
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	f := newFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = mustRate(t, 0.001, 1)
	f.setPolicy(t, p)
	if err := f.at(uint64(time.Second)); err != nil {
		t.Fatal(err)
	}
	const sources = 1100
	for i := 0; i <= sources; i++ { // the first INVITE is admitted
		src := netip.AddrFrom4([4]byte{198, 51, 100 + byte(i>>8), byte(i)})
		if _, err := f.run(inviteFrom(src, f.nextCall())); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := maps.ReadRejects(f.objs.Rejects)
	if err != nil {
		t.Fatal(err)
	}
	var own, others, total uint64
	for _, r := range recs {
		total += r.Count
		if r.Source == "other sources" {
			others += r.Count
		} else {
			own++
		}
	}
	if own != 1024 || total != sources || others != sources-1024 {
		t.Errorf("%d records of their own, %d rejects in other sources, %d in all; want 1024, %d, %d",
			own, others, total, sources-1024, sources)
	}
}
