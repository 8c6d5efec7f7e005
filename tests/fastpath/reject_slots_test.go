package fastpath

import (
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

// TestRejectSlots: a source's rejects count in a slot of the CPU, not in
// the table; a record whose slot holds one the daemon has not read goes
// to the table, and one the daemon has read is written over; every
// record is swept once, from the slots as from the table.
func TestRejectSlots(t *testing.T) {
	runtime.LockOSThread() // ends with the test, pinned as it is
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	f := harness.NewFastPath(t, false)
	tables := maps.RejectTablesOf(&f.Objs.XdpMaps)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 0.001, 1) // one call, then every INVITE is refused
	f.SetPolicy(t, p)
	run := func(at time.Duration, src netip.Addr, n int) {
		t.Helper()
		if err := f.At(uint64(at)); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := f.Check(harness.InviteFrom(src, f.NextCall())); err != nil {
				t.Fatal(err)
			}
		}
	}
	slotOf := func(i uint32) bpf.XdpCacRejectScratch {
		t.Helper()
		var cpus []bpf.XdpCacRejectScratch
		if err := f.Objs.RejectSlots.Lookup(i, &cpus); err != nil {
			t.Fatal(err)
		}
		return cpus[0]
	}
	tableCount := func() (n uint64) {
		var k bpf.XdpCacRejectKey
		var r bpf.XdpCacReject
		for it := f.Objs.Rejects.Iterate(); it.Next(&k, &r); {
			n += r.Count
		}
		return n
	}
	sweep := func(at time.Duration, all bool, want map[string]uint64) {
		t.Helper()
		recs, err := maps.SweepRejects(tables, uint64(at), all)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for _, r := range recs {
			got[r.Source] += r.Count
		}
		if len(got) != len(want) {
			t.Errorf("sweep at %v (all %v): %v, want %v", at, all, got, want)
		}
		for s, n := range want {
			if got[s] != n {
				t.Errorf("sweep at %v (all %v): %v, want %v", at, all, got, want)
			}
		}
	}

	a := netip.MustParseAddr("203.0.113.1")
	run(10100*time.Millisecond, a, 4) // one admitted, three refused
	keyA := maps.Reject{}
	slots := uint32(bpf.XdpCacRejectRecordCAC_REJECT_SLOTS)
	slotA := slots
	for i := range slots {
		if s := slotOf(i); s.Rec.Count > 0 {
			if slotA != slots {
				t.Fatalf("records in slots %d and %d, want one", slotA, i)
			}
			slotA, keyA = i, maps.RejectOf(s.Key, s.Rec)
			if got := maps.RejectSlot(s.Key); got != i {
				t.Errorf("the record of %s is in slot %d, the Go twin says %d", keyA.Source, i, got)
			}
		}
	}
	if keyA.Source != a.String() || keyA.Count != 3 || tableCount() != 0 {
		t.Fatalf("after three rejects of %s: slot %d holds %+v, the table %d; want the three in the slot", a, slotA, keyA, tableCount())
	}

	// Sources whose records of second 12 fall in A's slot.
	k := slotOf(slotA).Key
	var colliding []netip.Addr
	for i := 2; i < 512 && len(colliding) < 2; i++ {
		src := netip.AddrFrom4([4]byte{203, 0, 113, byte(i)})
		if i >= 256 {
			src = netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		}
		kk := k
		kk.Second = 12
		copy(kk.Source.Addr[:4], src.AsSlice())
		if maps.RejectSlot(kk) == slotA {
			colliding = append(colliding, src)
		}
	}
	if len(colliding) < 2 {
		t.Fatalf("no two sources of 512 fall in slot %d", slotA)
	}
	b, c := colliding[0], colliding[1]

	// A's record is not read yet: B's goes to the table.
	run(12100*time.Millisecond, b, 2)
	if s := slotOf(slotA); maps.RejectOf(s.Key, s.Rec).Source != a.String() || tableCount() != 2 {
		t.Fatalf("B's rejects with A's record unread: slot holds %+v, the table %d; want A's record and 2", maps.RejectOf(s.Key, s.Rec), tableCount())
	}
	sweep(12500*time.Millisecond, false, map[string]uint64{a.String(): 3})
	// A's second is read: C's record takes the slot.
	run(12200*time.Millisecond, c, 1)
	if s := slotOf(slotA); maps.RejectOf(s.Key, s.Rec).Source != c.String() || s.Rec.Count != 1 {
		t.Fatalf("C's reject after A's second was read: the slot holds %+v, want C's record", maps.RejectOf(s.Key, s.Rec))
	}
	sweep(12500*time.Millisecond, false, map[string]uint64{}) // A is not read twice
	sweep(12500*time.Millisecond, true, map[string]uint64{b.String(): 2, c.String(): 1})
	if recs, err := maps.ReadRejects(tables); err != nil || len(recs) != 0 {
		t.Errorf("after sweeping all: %+v, %v; want nothing", recs, err)
	}
	// The pins of a version before the slots have the table alone.
	run(15100*time.Millisecond, c, 1)
	old := maps.RejectTables{Records: f.Objs.Rejects}
	if recs, err := maps.SweepRejects(old, uint64(20*time.Second), false); err != nil || len(recs) != 0 {
		t.Errorf("a table without slots: %+v, %v; want nothing (the reject is in a slot)", recs, err)
	}
}
