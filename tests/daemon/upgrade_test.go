package daemon

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// attachedForUpgrade attaches the filter of lifeConfig with burst 3 and
// takes one PADI, for a test to stand an older version in under it; it
// returns the file and the attachment's pin directory.
func attachedForUpgrade(t *testing.T) (tb *harness.Testbed, cfg string, a loader.Attachment, dir string) {
	t.Helper()
	tb = harness.NewTestbed(t)
	cfg = harness.WriteConfig(t, lifeConfig(tb, 3, ""))
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	tb.PadiOutcome(t)
	a = loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
	return tb, cfg, a, a.Dir(tb.State)
}

// oldVersionOnLink stands another program, an older version's, on the
// pinned link of the attachment in dir.
func oldVersionOnLink(t *testing.T, dir string) {
	t.Helper()
	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Update(harness.PassProgram(t, "old_version")); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeAddsMaps: an attachment of a version before the L2TP tunnel
// table and the recent Call-ID table has no pins of them. The reading
// commands still work on it, and an upgrade makes the tables, pins them
// beside the others and switches the link to this version's program,
// which uses them; the other maps, and what they count, stay, and every
// Call-ID counts as recent in the new table.
func TestUpgradeAddsMaps(t *testing.T) {
	tb, _, a, dir := attachedForUpgrade(t)

	// Stand in the older version: another program on the link, and no
	// pin of the table it did not have.
	oldVersionOnLink(t, dir)
	pin := filepath.Join(dir, bpf.XdpMapL2tpTunnels)
	recentPin := filepath.Join(dir, bpf.XdpMapRecentCalls)
	for _, p := range []string{pin, recentPin} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if s := tb.Stats(t).Classes["pppoe-padi"]; s.Seen != 1 {
		t.Errorf("show stats on the older attachment: %+v, want its 1 PADI", s)
	}

	before := coarseNow(t)
	got, err := loader.Adopt(a, loader.Options{StateDir: tb.State})
	if err != nil || got != loader.Upgraded {
		t.Fatalf("adopt: %v, %v; want upgraded", got, err)
	}
	after := coarseNow(t)
	runningUses(t, tb, pin)
	allRecent(t, runningUses(t, tb, recentPin), before, after)
	if s := tb.Stats(t).Classes["pppoe-padi"]; s.Seen != 1 {
		t.Errorf("counters after the upgrade: %+v, want the 1 PADI of before", s)
	}
}

// allRecent checks that every slot of the recent Call-ID table an upgrade
// made holds a stamp of a time between before and after: the copies of
// INVITEs the older version admitted are still looked up as copies.
func allRecent(t *testing.T, m *ebpf.Map, before, after uint64) {
	t.Helper()
	ok := map[byte]bool{maps.RecentStamp(before): true, maps.RecentStamp(after): true}
	var line []byte
	for i := range m.MaxEntries() {
		if err := m.Lookup(i, &line); err != nil {
			t.Fatal(err)
		}
		for j, b := range line {
			if !ok[b] {
				t.Fatalf("slot %d of line %d of the new recent Call-ID table is %#x, want the upgrade's stamp %#x", j, i, b, maps.RecentStamp(before))
			}
		}
	}
}

// coarseNow reads the clock the program reads.
func coarseNow(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// runningUses checks that the program on the box's interface uses the map
// pinned at pin, and returns the map.
func runningUses(t *testing.T, tb *harness.Testbed, pin string) *ebpf.Map {
	t.Helper()
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatalf("the upgrade pinned no %s: %v", filepath.Base(pin), err)
	}
	t.Cleanup(func() { m.Close() })
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	mapID, _ := info.ID()
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(harness.XdpProgID(t, tb.Box, tb.BoxIface)))
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	pinfo, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := pinfo.MapIDs()
	for _, id := range ids {
		if id == mapID {
			return m
		}
	}
	t.Fatalf("the running program (maps %v) does not use the pinned %s %d", ids, filepath.Base(pin), mapID)
	return nil
}

// TestUpgradeReshapesRejects: a version before each CPU kept reject
// records of its own pinned a rejects table with a shorter key, an LRU.
// An upgrade makes the table afresh, pins it in the old one's place and
// switches to this version, which records rejects in it.
func TestUpgradeReshapesRejects(t *testing.T) {
	tb, m := upgradeOverOldPin(t, bpf.XdpMapRejects, &ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 32, ValueSize: 40, MaxEntries: 1024})
	if m.Type() != ebpf.Hash || m.KeySize() != uint32(binary.Size(bpf.XdpCacRejectKey{})) {
		t.Errorf("the pinned rejects table is a %v with %d-byte keys, want this version's", m.Type(), m.KeySize())
	}
	if s := tb.Stats(t).Classes["pppoe-padi"]; s.Seen != 1 {
		t.Errorf("counters after the upgrade: %+v, want the 1 PADI of before", s)
	}
	tb.Until(t, "class", 10*time.Second)         // burst 3: the fourth is rejected
	recs, err := loader.ReadAllRejects(tb.State) // the table and the slots
	if err != nil || len(recs) != 1 || recs[0].Count != 1 {
		t.Errorf("reject records after the upgrade: %+v, %v; want the one PADI rejected", recs, err)
	}
}

// TestUpgradeReshapesDialogs: a dialog table pinned by a version whose
// table was an LRU hash map is made afresh as this version's array of
// sets, and the program that runs after the upgrade uses it.
func TestUpgradeReshapesDialogs(t *testing.T) {
	_, m := upgradeOverOldPin(t, bpf.XdpMapDialogs, &ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 8, ValueSize: 24, MaxEntries: 1024})
	if m.Type() != ebpf.Array || m.ValueSize() != uint32(binary.Size(bpf.XdpCacDialogSet{})) {
		t.Errorf("the pinned dialog table is a %v of %d-byte values, want this version's array of sets", m.Type(), m.ValueSize())
	}
}

// upgradeOverOldPin attaches, puts an older version on the link with the
// map name pinned in the shape old, upgrades, and returns the map the
// running program uses in its place.
func upgradeOverOldPin(t *testing.T, name string, old *ebpf.MapSpec) (*harness.Testbed, *ebpf.Map) {
	t.Helper()
	tb, _, a, dir := attachedForUpgrade(t)
	oldVersionOnLink(t, dir)
	pin := filepath.Join(dir, name)
	m, err := ebpf.NewMap(old)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	if err := m.Pin(pin); err != nil {
		t.Fatal(err)
	}
	got, err := loader.Adopt(a, loader.Options{StateDir: tb.State})
	if err != nil || got != loader.Upgraded {
		t.Fatalf("adopt: %v, %v; want upgraded", got, err)
	}
	return tb, runningUses(t, tb, pin)
}

// TestUpgradeSharesAddedMaps: two interfaces of one state directory share
// their tables. Upgraded one after the other from a version without the
// recent Call-ID and dialog tables of this one, they share the tables the
// first upgrade made, as an attach of both with this version would.
func TestUpgradeSharesAddedMaps(t *testing.T) {
	tb, cfg, a, dir := attachedForUpgrade(t)
	second, _ := testenv.Veth(t, tb.Box, tb.Peer)
	if _, stderr, err := tb.Cacctl(t, "attach", second, "--config", cfg); err != nil {
		t.Fatalf("attach %s: %v: %s", second, err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", second) })
	b := loader.Attachment{Iface: second, Netns: tb.Box}
	names := []string{bpf.XdpMapRecentCalls, bpf.XdpMapDialogs}
	old := &ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 8, ValueSize: 24, MaxEntries: 1024}
	for _, d := range []string{dir, b.Dir(tb.State)} {
		oldVersionOnLink(t, d)
		if err := os.Remove(filepath.Join(d, bpf.XdpMapRecentCalls)); err != nil {
			t.Fatal(err)
		}
		// One old dialog table, pinned in both directories.
		pin := filepath.Join(d, bpf.XdpMapDialogs)
		if err := os.Remove(pin); err != nil {
			t.Fatal(err)
		}
		m, err := ebpf.NewMap(old)
		if err != nil {
			t.Fatal(err)
		}
		err = m.Pin(pin)
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []loader.Attachment{a, b} {
		if got, err := loader.Adopt(at, loader.Options{StateDir: tb.State}); err != nil || got != loader.Upgraded {
			t.Fatalf("adopt %s: %v, %v; want upgraded", at, got, err)
		}
	}
	for _, name := range names {
		ids := [2]ebpf.MapID{}
		for i, d := range []string{dir, b.Dir(tb.State)} {
			m, err := ebpf.LoadPinnedMap(filepath.Join(d, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			info, err := m.Info()
			m.Close()
			if err != nil {
				t.Fatal(err)
			}
			ids[i], _ = info.ID()
		}
		if ids[0] != ids[1] {
			t.Errorf("after the upgrades the two interfaces pin %s maps %d and %d, want one shared", name, ids[0], ids[1])
		}
	}
}
