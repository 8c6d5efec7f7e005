package maps

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// newDenyTable makes a deny table as the object declares it, smaller.
func newDenyTable(t *testing.T) *ebpf.Map {
	t.Helper()
	testenv.RequireBPF(t)
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	ms := spec.Maps[bpf.XdpMapDenied].Copy()
	ms.MaxEntries = 3000 // more than a batch: ReadDenied must go past one
	m, err := ebpf.NewMap(ms)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestReadDenied: every source written to the deny table reads back once,
// named as the operator writes it (an IPv4 address, an IPv6 prefix of the
// settings' length, a MAC), with its times, frames and refusals; deleted,
// it is gone, and deleting it again is no error.
func TestReadDenied(t *testing.T) {
	m := newDenyTable(t)
	v4 := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 7}}
	v6 := bpf.XdpCacDenyKey{Family: 6, Addr: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2}}
	mac := bpf.XdpCacDenyKey{Family: 0, Addr: [16]byte{0x02, 0, 0x5e, 0x10, 0, 0x01}}
	want := map[string]bpf.XdpCacDenied{
		"203.0.113.7":       {SinceNs: 10, UntilNs: 20, Frames: 3, Refusals: 5},
		"2001:db8:1:2::/64": {SinceNs: 11, UntilNs: 21, Frames: 0, Refusals: 6},
		"02:00:5e:10:00:01": {SinceNs: 12, UntilNs: 22, Frames: 9, Refusals: 7},
	}
	keys := map[string]bpf.XdpCacDenyKey{"203.0.113.7": v4, "2001:db8:1:2::/64": v6, "02:00:5e:10:00:01": mac}
	for s, v := range want {
		if err := m.Put(keys[s], v); err != nil {
			t.Fatal(err)
		}
	}
	// Enough others that the batches take more than one call.
	for i := range 2000 {
		k := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{198, 51, byte(i >> 8), byte(i)}}
		if err := m.Put(k, bpf.XdpCacDenied{SinceNs: 1, UntilNs: 2}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadDenied(m, nil, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2003 {
		t.Fatalf("read %d sources, want 2003", len(got))
	}
	found := 0
	for _, d := range got {
		w, ok := want[d.Source]
		if !ok {
			continue
		}
		found++
		if d.Key != keys[d.Source] || d.SinceNS != w.SinceNs || d.UntilNS != w.UntilNs || d.Frames != w.Frames || d.Refusals != w.Refusals {
			t.Errorf("%s read as %+v, want %+v", d.Source, d, w)
		}
	}
	if found != 3 {
		t.Errorf("found %d of the 3 sources by name in %d", found, len(got))
	}
	if err := DeleteDenied(m, []bpf.XdpCacDenyKey{v4, mac, v4}); err != nil {
		t.Fatalf("delete, one key twice: %v", err)
	}
	got, err = ReadDenied(m, nil, 128)
	if err != nil {
		t.Fatal(err)
	}
	srcs := make([]string, 0, len(got))
	for _, d := range got {
		srcs = append(srcs, d.Source)
	}
	if len(got) != 2001 || slices.Contains(srcs, "203.0.113.7") || !slices.Contains(srcs, "2001:db8:1:2::") {
		t.Errorf("after deleting two: %d sources; want 2001, the IPv6 one named as an address at /128", len(got))
	}
}

// TestReadDeniedPending: the frames each CPU holds for a source in
// deny_pending are added to its entry's, but a count of an earlier denial
// of it (another since) and one of a source gone from the table are not.
func TestReadDeniedPending(t *testing.T) {
	m := newDenyTable(t)
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	pending, err := ebpf.NewMap(spec.Maps[bpf.XdpMapDenyPending].Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pending.Close() })
	a := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 7}}
	b := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 8}}
	gone := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 9}}
	for k, v := range map[bpf.XdpCacDenyKey]bpf.XdpCacDenied{a: {SinceNs: 10, UntilNs: 20, Frames: 100}, b: {SinceNs: 30, UntilNs: 40, Frames: 5}} {
		if err := m.Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	if cpus < 2 {
		t.Skip("one possible CPU: no second count to add")
	}
	per := make([]bpf.XdpCacDenyPending, cpus)
	per[0] = bpf.XdpCacDenyPending{Key: a, SinceNs: 10, Frames: 7}
	per[1] = bpf.XdpCacDenyPending{Key: b, SinceNs: 29, Frames: 1000} // b denied before, released
	if cpus > 2 {
		per[2] = bpf.XdpCacDenyPending{Key: gone, SinceNs: 50, Frames: 3}
	}
	if cpus > 3 {
		per[3] = bpf.XdpCacDenyPending{Key: a, SinceNs: 10, Frames: 20}
	}
	if err := pending.Put(uint32(0), per); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDenied(m, pending, 64)
	if err != nil {
		t.Fatal(err)
	}
	wantA := uint64(107)
	if cpus > 3 {
		wantA = 127
	}
	want := map[string]uint64{"203.0.113.7": wantA, "203.0.113.8": 5}
	if len(got) != len(want) {
		t.Fatalf("read %d sources, want %d", len(got), len(want))
	}
	for _, d := range got {
		if d.Frames != want[d.Source] {
			t.Errorf("%s: %d frames, want %d", d.Source, d.Frames, want[d.Source])
		}
	}
}

// TestDenySourceV6Prefix: an IPv6 key is named by the settings' prefix.
func TestDenySourceV6Prefix(t *testing.T) {
	k := bpf.XdpCacDenyKey{Family: 6, Addr: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xaa}}
	for _, c := range []struct {
		bits uint8
		want string
	}{{48, "2001:db8:aa00::/48"}, {64, "2001:db8:aa00::/64"}, {128, "2001:db8:aa00::"}} {
		if got := DenySource(k, c.bits); got != c.want {
			t.Errorf("/%d: %q, want %q", c.bits, got, c.want)
		}
	}
}

// TestDeniedCounters: the access counters of every CPU are summed, and
// show stats -o json names them.
func TestDeniedCounters(t *testing.T) {
	testenv.RequireBPF(t)
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ebpf.NewMap(spec.Maps[bpf.XdpMapStats])
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	per := make([]bpf.XdpCacStats, cpus)
	for i := range per {
		per[i].DeniedStatic, per[i].DeniedAuto, per[i].DenyAdded = 1, 10, 100
	}
	if err := m.Put(uint32(0), per); err != nil {
		t.Fatal(err)
	}
	s, err := ReadStats(m)
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(cpus)
	if s.DeniedStatic != n || s.DeniedAuto != 10*n || s.DenyAdded != 100*n {
		t.Errorf("read %d, %d, %d over %d CPUs", s.DeniedStatic, s.DeniedAuto, s.DenyAdded, cpus)
	}
	v := s.View()
	if v.DeniedStatic != n || v.DeniedAuto != 10*n || v.DenyAdded != 100*n {
		t.Errorf("view %+v", v)
	}
}

// TestDeniedLive: a source counts while now is before its until, and no
// longer from its until on, as the fast path releases it (bpf/access.h).
func TestDeniedLive(t *testing.T) {
	denied := []Denied{{UntilNS: 100}, {UntilNS: 200}, {UntilNS: 300}}
	for _, c := range []struct{ now, want uint64 }{{0, 3}, {99, 3}, {100, 2}, {250, 1}, {300, 0}} {
		if got := DeniedLive(denied, c.now); got != c.want {
			t.Errorf("DeniedLive at %d = %d, want %d", c.now, got, c.want)
		}
	}
	if got := DeniedLive(nil, 0); got != 0 {
		t.Errorf("DeniedLive of an empty table = %d, want 0", got)
	}
}
