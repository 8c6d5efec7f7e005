package fastpath

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"golang.org/x/sys/unix"
)

// TestRejectRecords: rejects are counted per source, class, reason and
// second; a sweep takes out the records of finished seconds, each once,
// whether or not their source is rejected again, and leaves the rest.
func TestRejectRecords(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 0.001, 1)
	f.SetPolicy(t, p)
	// Calls from a and b, each INVITE a call of its own.
	a, b := netip.MustParseAddr("203.0.113.1"), netip.MustParseAddr("203.0.113.2")
	run := func(at time.Duration, srcs ...netip.Addr) {
		t.Helper()
		if err := f.At(uint64(at)); err != nil {
			t.Fatal(err)
		}
		for _, src := range srcs {
			if err := f.Check(harness.InviteFrom(src, f.NextCall())); err != nil {
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
		recs, err := maps.ReadRejects(maps.RejectTablesOf(&f.Objs.XdpMaps))
		if err != nil {
			t.Fatal(err)
		}
		return byKey(recs)
	}
	sweep := func(at time.Duration, all bool) map[string]maps.Reject {
		t.Helper()
		recs, err := maps.SweepRejects(maps.RejectTablesOf(&f.Objs.XdpMaps), uint64(at), all)
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
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 0.001, 1)
	f.SetPolicy(t, p)
	if err := f.At(uint64(time.Second)); err != nil {
		t.Fatal(err)
	}
	const sources = 1100
	for i := 0; i <= sources; i++ { // the first INVITE is admitted
		src := netip.AddrFrom4([4]byte{198, 51, 100 + byte(i>>8), byte(i)})
		if _, err := f.Run(harness.InviteFrom(src, f.NextCall())); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := maps.ReadRejects(maps.RejectTablesOf(&f.Objs.XdpMaps))
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

// TestRejectRecordsPerCPU: each CPU counts a source's rejects in a record
// of its own, which no other CPU writes, and whoever reads the table gets
// one record of the source, class, reason and second: the counts added,
// the first of the firsts and the last of the lasts.
func TestRejectRecordsPerCPU(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	runtime.LockOSThread() // ends with the test, pinned as it is
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 0.001, 1)
	f.SetPolicy(t, p)
	src := netip.MustParseAddr("203.0.113.7")
	onCPU := func(cpu int, at time.Duration, n int) {
		t.Helper()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Fatal(err)
		}
		if err := f.At(uint64(at)); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := f.Check(harness.InviteFrom(src, f.NextCall())); err != nil {
				t.Fatal(err)
			}
		}
	}
	onCPU(0, 1100*time.Millisecond, 4) // one admitted, then 3 rejected
	onCPU(1, 1200*time.Millisecond, 5)
	onCPU(0, 1300*time.Millisecond, 1)

	counts := rawRejectCounts(t, f)
	if len(counts) != 2 || counts[0] != 4 || counts[1] != 5 {
		t.Errorf("raw records by CPU: %v, want 4 on CPU 0 and 5 on CPU 1", counts)
	}
	want := maps.Reject{Count: 9, FirstNS: uint64(1100 * time.Millisecond), LastNS: uint64(1300 * time.Millisecond)}
	check := func(what string, recs []maps.Reject) {
		t.Helper()
		if len(recs) != 1 || recs[0].Count != want.Count || recs[0].FirstNS != want.FirstNS || recs[0].LastNS != want.LastNS {
			t.Errorf("%s: %+v, want one record of 9 rejects from 1.1 s to 1.3 s", what, recs)
		}
	}
	recs, err := maps.ReadRejects(maps.RejectTablesOf(&f.Objs.XdpMaps))
	if err != nil {
		t.Fatal(err)
	}
	check("read", recs)
	if recs, err = maps.SweepRejects(maps.RejectTablesOf(&f.Objs.XdpMaps), uint64(3*time.Second), false); err != nil {
		t.Fatal(err)
	}
	check("swept", recs)
}

// rawRejectCounts adds up the rejects of the raw records, in the table and
// in the slots, by the CPU of their keys; a slot's record must sit in the
// copy of the CPU its key names.
func rawRejectCounts(t *testing.T, f *harness.FastPath) map[uint32]uint64 {
	t.Helper()
	counts := map[uint32]uint64{}
	var k bpf.XdpCacRejectKey
	var r bpf.XdpCacReject
	it := f.Objs.Rejects.Iterate()
	for it.Next(&k, &r) {
		counts[k.Cpu] += r.Count
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	var i uint32
	var cpus []bpf.XdpCacRejectScratch
	sit := f.Objs.RejectSlots.Iterate()
	for sit.Next(&i, &cpus) {
		for cpu, s := range cpus {
			if s.Rec.Count == 0 {
				continue
			}
			if s.Key.Cpu != uint32(cpu) {
				t.Errorf("slot %d of CPU %d holds a record of CPU %d", i, cpu, s.Key.Cpu)
			}
			counts[s.Key.Cpu] += s.Rec.Count
		}
	}
	if err := sit.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}
