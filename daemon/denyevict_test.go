package daemon

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/bpf"
)

// TestEvictionsBalance (docs/design.md, "Auto-deny"): what the fast path
// added and is neither in the table, nor taken out by the daemon, nor an
// entry written again, was evicted; the first read is the baseline, an
// attachment new since counts all it added, and the count never goes back.
func TestEvictionsBalance(t *testing.T) {
	type eth = map[string]uint64
	var e evictions
	for _, step := range []struct {
		what      string
		took      int // entries the daemon took out before the read
		overwrote int // entries denied again over their own
		table     ebpf.MapID
		added     eth
		entries   int
		want      uint64
	}{
		{"the baseline: 500 added before the daemon", 0, 0, 7, eth{"eth0": 500}, 40, 0},
		// 100 more added, 3 of them over their own expired entries: the
		// table may hold 40-5+97 = 132 and holds 120.
		{"the first storm second", 5, 3, 7, eth{"eth0": 600}, 120, 12},
		// A new attachment's 30 count whole; eth0's count went back (its
		// program replaced): its 10 count from 0. 120+40 = 160, 150 held.
		{"a new attachment", 0, 0, 7, eth{"eth0": 10, "eth1": 30}, 150, 22},
		// A source added between the reads of stats and table shows as
		// an entry nothing added and is counted at the next read: the
		// count holds meanwhile.
		{"an entry ahead of its count", 0, 0, 7, eth{"eth0": 10, "eth1": 30}, 151, 22},
		{"its count caught up", 0, 0, 7, eth{"eth0": 11, "eth1": 30}, 151, 22},
		{"four added, none held", 0, 0, 7, eth{"eth0": 15, "eth1": 30}, 151, 26},
		// Every interface detached and attached again: a new table, its
		// entries no evictions of the old one's.
		{"a new table", 0, 0, 8, eth{"eth0": 3}, 3, 26},
		{"the new table grows", 0, 0, 8, eth{"eth0": 10}, 10, 26},
	} {
		e.took(step.took)
		for range step.overwrote {
			e.overwrote()
		}
		e.balance(step.table, step.added, step.entries)
		if e.total != step.want {
			t.Fatalf("%s: %d evicted, want %d", step.what, e.total, step.want)
		}
	}
}

// TestDenyWatchEvicted: a source the daemon saw denied that leaves the
// table before its until is recorded released as evicted and counted; one
// that left after its until is recorded released as expired.
func TestDenyWatchEvicted(t *testing.T) {
	denied, settings, slot := denyMaps(t)
	var lines []api.RejectLine
	w := autoDenyWatch(t, settings, slot, &lines)
	now := uint64(100e9)
	w.mono, w.wall = func() uint64 { return now }, func() time.Time { return time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC) }
	a := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 8}}
	b := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 9}}
	for _, k := range []bpf.XdpCacDenyKey{a, b} {
		if err := denied.Put(k, bpf.XdpCacDenied{SinceNs: 99e9, UntilNs: 100e9 + uint64(k.Addr[3])*1e9 - 7e9, Refusals: 4}); err != nil {
			t.Fatal(err)
		}
	}
	sweep := func(added uint64) {
		t.Helper()
		if err := w.sweep(denied, nil, settings, slot, map[string]uint64{"eth0": added}); err != nil {
			t.Fatal(err)
		}
	}
	sweep(2)
	if n, ok := w.evicted(); !ok || n != 0 || len(lines) != 2 {
		t.Fatalf("first sweep: %d evicted (%v), records %+v", n, ok, lines)
	}
	lines = nil
	// a (until 101 s) and b (until 102 s) leave the table as an LRU takes
	// them; at 101.5 s a's until has passed, b's has not.
	for _, k := range []bpf.XdpCacDenyKey{a, b} {
		if err := denied.Delete(k); err != nil {
			t.Fatal(err)
		}
	}
	now = 101.5e9
	sweep(2)
	if len(lines) != 2 {
		t.Fatalf("records: %+v", lines)
	}
	why := map[string]string{}
	for _, l := range lines {
		if l.Event != api.EventReleased {
			t.Errorf("record %+v, want released", l)
		}
		why[l.Source] = l.Why
	}
	if why["203.0.113.8"] != api.ReleasedExpired || why["203.0.113.9"] != api.ReleasedEvicted {
		t.Errorf("released as %v, want .8 expired and .9 evicted", why)
	}
	if n, _ := w.evicted(); n != 2 {
		t.Errorf("%d evicted, want 2: both left the table without the daemon", n)
	}
}
