package loader

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// statsMap makes a stats map as the program's, not pinned.
func statsMap(t *testing.T) *ebpf.Map {
	t.Helper()
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ebpf.NewMap(spec.Maps[bpf.XdpMapStats].Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// setAdmitted writes n admitted PADIs on the first CPU of m.
func setAdmitted(t *testing.T, m *ebpf.Map, n uint64) {
	t.Helper()
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	perCPU := make([]bpf.XdpCacStats, cpus)
	perCPU[0].Classes[cac.PPPoEPADI].Admitted = n
	if err := m.Update(uint32(0), perCPU, ebpf.UpdateExist); err != nil {
		t.Fatal(err)
	}
}

// TestClearCounters: after clear counters an attachment's counters show
// from zero, the stats map untouched; a later clear replaces the base; a
// base above the map's counters, or read from another map, is stale and
// the counters show whole.
func TestClearCounters(t *testing.T) {
	testenv.RequireBPF(t)
	stateDir := filepath.Join(bpffsRoot, testenv.Unique("xdpcac-t-"))
	if err := ensureStateDir(stateDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	p := &Pinned{Attachment: Attachment{Iface: "eth0.7", Netns: "blue"}}
	if err := os.Mkdir(p.Dir(stateDir), 0o700); err != nil {
		t.Fatal(err)
	}
	p.Stats = statsMap(t)
	shows := func(want uint64, cleared time.Time) {
		t.Helper()
		s, err := ShownStats(stateDir, p)
		if got := s.Stats.Classes[cac.PPPoEPADI].Admitted; err != nil || got != want || !s.ClearedAt.Equal(cleared) {
			t.Fatalf("shown: %d admitted, cleared at %v, %v; want %d, %v", got, s.ClearedAt, err, want, cleared)
		}
	}
	setAdmitted(t, p.Stats, 300)
	shows(300, time.Time{})
	at := time.Now()
	if err := ClearCounters(stateDir, p, at); err != nil {
		t.Fatal(err)
	}
	shows(0, at)
	setAdmitted(t, p.Stats, 760)
	shows(460, at)
	later := at.Add(time.Minute)
	if err := ClearCounters(stateDir, p, later); err != nil {
		t.Fatal(err)
	}
	shows(0, later)
	// Below the base: the map counted again from zero since.
	setAdmitted(t, p.Stats, 5)
	shows(5, time.Time{})
	// Another map, counting past the base: not the one it was read from.
	p.Stats = statsMap(t)
	setAdmitted(t, p.Stats, 1000)
	shows(1000, time.Time{})
	if entries, _ := os.ReadDir(p.Dir(stateDir)); len(entries) != 1 || entries[0].Name() != pinCleared {
		t.Errorf("the attachment's directory holds %v, want the one pin %s", entries, pinCleared)
	}
}
