package fastpath

import (
	"math"
	"net/netip"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/internal/model/access"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestDeniedFramesCounted: the frames dropped from each denied source add
// up exactly, in the deny table's entry and the CPU's count of the source
// it holds (deny_pending) as the daemon reads them: a flood from one
// source is handed to its entry every CAC_DENY_PENDING_MAX frames; a
// second source's frames go to its entry while the first keeps sending;
// the CPU's count moves to the second once the first has been quiet for
// CAC_DENY_PENDING_IDLE_NS, and hands the first's frames to its entry;
// a source released and denied again starts from 0.
func TestDeniedFramesCounted(t *testing.T) {
	// BPF_PROG_TEST_RUN runs on the caller's CPU: one CPU holds the
	// count the steps below follow.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var one unix.CPUSet
	one.Set(0)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, autoDenyPolicy(t))
	// Auto-deny on, never reached: the sources are put in the table.
	f.SetAccess(t, access.Lists{}, access.Settings{SlotNS: 1e9 / 8, DenyForNS: 600e9, Refused: math.MaxUint32, IPv6Prefix: 64})
	a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")
	key := func(s netip.Addr) bpf.XdpCacDenyKey {
		k := bpf.XdpCacDenyKey{Family: 4}
		v4 := s.As4()
		copy(k.Addr[:], v4[:])
		return k
	}
	deny := func(s netip.Addr, since uint64) {
		t.Helper()
		if err := f.Objs.Denied.Update(key(s), bpf.XdpCacDenied{SinceNs: since, UntilNs: math.MaxUint64}, ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	deny(a, 100)
	deny(b, 100)
	send := func(s netip.Addr, n int, at uint64) {
		t.Helper()
		f.MustAt(t, at)
		for range n {
			if got, _, err := f.Objs.XdpCac.Test(inviteFrom(s, f.NextCall())); err != nil || got != 1 { // XDP_DROP
				t.Fatalf("a frame from %v: %d, %v; want a drop", s, got, err)
			}
		}
	}
	// check holds what the daemon reads (entry and pending) and what the
	// entries alone hold.
	check := func(step string, total, entry map[netip.Addr]uint64) {
		t.Helper()
		ds, err := maps.ReadDenied(f.Objs.Denied, f.Objs.DenyPending, 64)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for _, d := range ds {
			got[d.Source] = d.Frames
		}
		for s, n := range total {
			if got[s.String()] != n {
				t.Errorf("%s: %v read with %d frames, want %d", step, s, got[s.String()], n)
			}
		}
		for s, n := range entry {
			var d bpf.XdpCacDenied
			if err := f.Objs.Denied.Lookup(key(s), &d); err != nil {
				t.Fatal(err)
			}
			if d.Frames != n {
				t.Errorf("%s: %v's entry holds %d frames, want %d", step, s, d.Frames, n)
			}
		}
	}
	const idle = 10_000_000 // CAC_DENY_PENDING_IDLE_NS
	now := uint64(1e9)
	// The first goes to the entry as the CPU's count moves to a; then
	// two counts of CAC_DENY_PENDING_MAX.
	send(a, 2500, now)
	check("2,500 from a", map[netip.Addr]uint64{a: 2500}, map[netip.Addr]uint64{a: 2049})
	send(b, 5, now+1)
	check("5 from b, a not quiet", map[netip.Addr]uint64{a: 2500, b: 5}, map[netip.Addr]uint64{a: 2049, b: 5})
	now += idle
	send(b, 1, now)
	check("b after a's quiet", map[netip.Addr]uint64{a: 2500, b: 6}, map[netip.Addr]uint64{a: 2500, b: 6})
	send(b, 10, now+1)
	check("10 more from b", map[netip.Addr]uint64{b: 16}, map[netip.Addr]uint64{b: 6})
	// b released and denied again: its count starts afresh, and what
	// the CPU held of the last denial goes nowhere.
	deny(b, 200)
	check("b denied again", map[netip.Addr]uint64{b: 0}, nil)
	send(b, 1, now+2)
	check("b's first frame again", map[netip.Addr]uint64{b: 1}, map[netip.Addr]uint64{b: 1})
	now += 2 * idle
	send(b, 3, now)
	check("b after the old count's quiet", map[netip.Addr]uint64{a: 2500, b: 4}, map[netip.Addr]uint64{a: 2500, b: 2})
	if st := f.Stats(t); st.DeniedAuto != 2500+5+1+10+1+3 {
		t.Errorf("denied_auto %d, want every frame", st.DeniedAuto)
	}
}
