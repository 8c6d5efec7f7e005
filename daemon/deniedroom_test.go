package daemon

import (
	"log/slog"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// denyMaps are the maps the room reads, made as the object declares them.
func denyMaps(t *testing.T) (denied, settings, slot *ebpf.Map) {
	t.Helper()
	testenv.RequireBPF(t)
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) *ebpf.Map {
		m, err := ebpf.NewMap(spec.Maps[name])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	return mk(bpf.XdpMapDenied), mk(bpf.XdpMapAccessSettings), mk(bpf.XdpMapPolicySlot)
}

// autoDenyWatch is a room that records into lines, with auto-deny on
// and IPv6 sources kept by their /64.
func autoDenyWatch(t *testing.T, settings, slot *ebpf.Map, lines *[]api.RejectLine) *denyWatch {
	t.Helper()
	if err := slot.Put(uint32(0), uint32(bpf.XdpCacPolicyPOLICY_AUTO_DENY)); err != nil {
		t.Fatal(err)
	}
	if err := settings.Put(uint32(0), bpf.XdpCacAccessSettings{Ipv6Prefix: 64}); err != nil {
		t.Fatal(err)
	}
	return newDenyWatch(slog.New(slog.DiscardHandler), nil, func(l []api.RejectLine) { *lines = append(*lines, l...) })
}

// TestDenyWatchRecordsOnce (docs/design.md, "Auto-deny"): a source past
// its until is released, taken out and recorded once with its frames; a
// source still denied is recorded once as denied, and never again while
// it stays; with auto-deny off, it is released.
func TestDenyWatchRecordsOnce(t *testing.T) {
	denied, settings, slot := denyMaps(t)
	var lines []api.RejectLine
	w := autoDenyWatch(t, settings, slot, &lines)
	now := uint64(100e9)
	wall := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	w.mono, w.wall = func() uint64 { return now }, func() time.Time { return wall }
	old := bpf.XdpCacDenyKey{Family: 4, Addr: [16]byte{203, 0, 113, 7}}
	fresh := bpf.XdpCacDenyKey{Family: 6, Addr: [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1}}
	if err := denied.Put(old, bpf.XdpCacDenied{SinceNs: 30e9, UntilNs: 90e9, Frames: 77, Refusals: 10}); err != nil {
		t.Fatal(err)
	}
	step := func() {
		t.Helper()
		if err := w.sweep(denied, nil, settings, slot, nil); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if len(lines) != 2 || lines[0].Event != api.EventDenied || lines[1].Event != api.EventReleased ||
		lines[1].Why != api.ReleasedExpired || lines[1].Frames != 77 || lines[1].Source != "203.0.113.7" ||
		lines[1].Reason != "denied" || !lines[1].Since.Equal(wall.Add(-70*time.Second)) || lines[0].Refusals != 10 {
		t.Fatalf("the expired source: %+v", lines)
	}
	var v bpf.XdpCacDenied
	if err := denied.Lookup(old, &v); err == nil {
		t.Error("the expired source is still in the table")
	}
	lines = nil
	if err := denied.Put(fresh, bpf.XdpCacDenied{SinceNs: 99e9, UntilNs: 160e9, Refusals: 12}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		now += 1e9
		step()
	}
	if len(lines) != 1 || lines[0].Event != api.EventDenied || lines[0].Source != "2001:db8:0:1::/64" ||
		!lines[0].Until.Equal(wall.Add(59*time.Second)) || lines[0].Refusals != 12 {
		t.Fatalf("the new source over three sweeps: %+v", lines)
	}
	lines = nil
	if err := slot.Put(uint32(0), uint32(0)); err != nil {
		t.Fatal(err)
	}
	step()
	step()
	if len(lines) != 1 || lines[0].Event != api.EventReleased || lines[0].Why != api.ReleasedAutoDenyOff {
		t.Fatalf("auto-deny off: %+v", lines)
	}
	if err := denied.Lookup(fresh, &v); err == nil {
		t.Error("auto-deny off left the source in the table")
	}
}
