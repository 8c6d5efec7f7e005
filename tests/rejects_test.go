package tests

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/admission"
	"github.com/xdpcac/xdpcac/maps"
	"golang.org/x/sys/unix"
)

// TestRejectRecords: rejects are counted per source, class and reason for
// the current second; when a key's second is over and it rejects again,
// the finished second goes out on the ring buffer with its count.
func TestRejectRecords(t *testing.T) {
	f := newFastPath(t, false)
	var p admission.Policy
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
	run(time.Second, a, a, a, a, a, a, b, b, b) // one admitted, then 5 + 3 rejected

	byKey := func() map[string]maps.Reject {
		recs, err := maps.ReadRejects(f.objs.Rejects)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]maps.Reject{}
		for _, r := range recs {
			out[r.Source+" "+r.Class.String()+" "+r.Reason.String()] = r
		}
		return out
	}
	recs := byKey()
	if len(recs) != 2 || recs["203.0.113.1 sip-invite class"].Count != 5 || recs["203.0.113.2 sip-invite class"].Count != 3 {
		t.Fatalf("records after the first second: %+v", recs)
	}

	rd, err := ringbuf.NewReader(f.objs.RejectEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := rd.Read(); err == nil {
		t.Fatal("an event went out before any second was over")
	}

	run(2500*time.Millisecond, a, a)
	if r := byKey()["203.0.113.1 sip-invite class"]; r.Count != 2 || r.FirstNS != uint64(2500*time.Millisecond) {
		t.Errorf("record of the new second: %+v", r)
	}
	rd.SetDeadline(time.Now().Add(time.Second))
	ev, err := rd.Read()
	if err != nil {
		t.Fatalf("no event for the finished second: %v", err)
	}
	got, second, err := maps.DecodeRejectEvent(ev.RawSample)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != "203.0.113.1" || got.Class != cac.SIPInvite || got.Reason != cac.ReasonClass || got.Count != 5 || second != 1 {
		t.Errorf("event %+v (second %d), want 5 class rejects of 203.0.113.1 in second 1", got, second)
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
	var p admission.Policy
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
