package control

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// procStat writes a /proc/stat whose cpu line has these counters:
// user nice system idle iowait irq softirq steal.
func procStat(t *testing.T, root, counters string) {
	t.Helper()
	body := "cpu  " + counters + " 0 0\ncpu0 " + counters + " 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n"
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestStepSeed: a CPU 50 % busy (irq and softirq aside) with multiplier
// 100 is a load charge of 72.5, written with the heartbeat of the clock.
func TestStepSeed(t *testing.T) {
	root := t.TempDir()
	procStat(t, root, "100 0 100 100 0 0 0 0")
	s, err := cpu.NewSampler(cpu.Source{Kind: cpu.KindSystem}, cpu.Options{ProcRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	var wrote []policy.Inputs
	l := &Loop{
		Sampler: s, Window: cpu.NewWindow(time.Second), Multiplier: 100, Interval: time.Second,
		Write: func(in policy.Inputs) error { wrote = append(wrote, in); return nil },
		Clock: func() uint64 { return 42 },
	}
	if err := l.Prime(); err != nil {
		t.Fatal(err)
	}
	// +30 user +20 system, +30 idle, +10 irq +10 softirq: 50 % busy, the
	// interrupt time counted in the whole but not as busy.
	procStat(t, root, "130 0 120 130 0 10 10 0")
	m, err := l.Step()
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Inputs{HeartbeatNS: 42, LoadMilli: 72_500, CPUMilli: 50_000, CPUAverageMilli: 50_000}
	if len(wrote) != 1 || wrote[0] != want || m.Load != 72.5 {
		t.Fatalf("wrote %+v (load %v), want %+v", wrote, m.Load, want)
	}

	// A source that cannot be read writes nothing: no heartbeat without a
	// fresh measurement.
	os.Remove(filepath.Join(root, "stat"))
	if _, err := l.Step(); err == nil || !strings.Contains(err.Error(), "sample CPU") {
		t.Fatalf("step without /proc/stat: %v", err)
	}
	if len(wrote) != 1 {
		t.Fatalf("a failed sample wrote %+v", wrote[1:])
	}

	// A failed write is reported.
	procStat(t, root, "160 0 140 200 0 10 10 0")
	l.Write = func(policy.Inputs) error { return errors.New("map gone") }
	if _, err := l.Step(); err == nil || !strings.Contains(err.Error(), "map gone") {
		t.Fatalf("step with a failing write: %v", err)
	}
}

// TestNoLoadLine: without `call admission load` the load charge is 0 while
// the CPU of the gate is still measured.
func TestNoLoadLine(t *testing.T) {
	root := t.TempDir()
	procStat(t, root, "0 0 0 0 0 0 0 0")
	s, err := cpu.NewSampler(cpu.Source{Kind: cpu.KindSystem}, cpu.Options{ProcRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	var got policy.Inputs
	l := &Loop{Sampler: s, Window: cpu.NewWindow(0), Interval: time.Second,
		Write: func(in policy.Inputs) error { got = in; return nil }}
	if err := l.Prime(); err != nil {
		t.Fatal(err)
	}
	procStat(t, root, "75 0 0 25 0 0 0 0")
	if _, err := l.Step(); err != nil {
		t.Fatal(err)
	}
	if got.LoadMilli != 0 || got.CPUMilli != 75_000 || got.HeartbeatNS == 0 {
		t.Fatalf("wrote %+v, want no load, CPU 75 %% and a heartbeat", got)
	}
}
