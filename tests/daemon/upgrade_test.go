package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
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

// TestUpgradeAddsMaps: an attachment of a version before the L2TP tunnel
// table has no pin of it. The reading commands still work on it, and an
// upgrade makes the table, pins it beside the others and switches the
// link to this version's program, which uses it; the other maps, and
// what they count, stay.
func TestUpgradeAddsMaps(t *testing.T) {
	tb, _, a, dir := attachedForUpgrade(t)

	// Stand in the older version: another program on the link, and no
	// pin of the table it did not have.
	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Update(harness.PassProgram(t, "old_version")); err != nil {
		t.Fatal(err)
	}
	pin := filepath.Join(dir, bpf.XdpMapL2tpTunnels)
	if err := os.Remove(pin); err != nil {
		t.Fatal(err)
	}
	if s := tb.Stats(t).Classes["pppoe-padi"]; s.Seen != 1 {
		t.Errorf("show stats on the older attachment: %+v, want its 1 PADI", s)
	}

	got, err := loader.Adopt(a, loader.Options{StateDir: tb.State})
	if err != nil || got != loader.Upgraded {
		t.Fatalf("adopt: %v, %v; want upgraded", got, err)
	}
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatalf("the upgrade pinned no tunnel table: %v", err)
	}
	defer m.Close()
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
	uses := false
	for _, id := range ids {
		uses = uses || id == mapID
	}
	if !uses {
		t.Errorf("the running program (maps %v) does not use the pinned tunnel table %d", ids, mapID)
	}
	if s := tb.Stats(t).Classes["pppoe-padi"]; s.Seen != 1 {
		t.Errorf("counters after the upgrade: %+v, want the 1 PADI of before", s)
	}
}
