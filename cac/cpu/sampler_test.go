package cpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// procStatFile is a /proc/stat with the given aggregate counters (user nice
// system idle iowait irq softirq steal guest guest_nice) and two CPUs.
func procStatFile(c ...uint64) string {
	var b strings.Builder
	b.WriteString("cpu ")
	for _, n := range c {
		fmt.Fprintf(&b, " %d", n)
	}
	b.WriteString("\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 8 0 0\nintr 12345 0 0 1\nctxt 999\nbtime 1700000000\n")
	return b.String()
}

// pidStatFile is a /proc/PID/stat line. Fields 13, 16 and 17 (cmajflt,
// cutime, cstime) are big so that reading the wrong field shows.
func pidStatFile(pid int, comm string, utime, stime, start uint64) string {
	return fmt.Sprintf("%d (%s) S 1 1 1 0 -1 4194560 10 20 30 900000 %d %d 700000 800000 20 0 4 0 %d 123456789 1000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, utime, stime, start)
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestSystemExcludesInterrupts(t *testing.T) {
	proc := t.TempDir()
	write(t, filepath.Join(proc, "stat"), procStatFile(1000, 100, 400, 5000, 50, 300, 700, 60, 4000, 4000))
	s, err := NewSampler(Source{Kind: KindSystem}, Options{ProcRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	r0, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	// Busy +50 (user 30, nice 5, system 15); irq +20, softirq +25 and
	// steal +5 are in the total only; guest +9000 counts nowhere, being
	// inside user already. Total +100.
	write(t, filepath.Join(proc, "stat"), procStatFile(1030, 105, 415, 5000, 50, 320, 725, 65, 8500, 8500))
	r1, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if d := r1.Busy - r0.Busy; d != 500*time.Millisecond {
		t.Errorf("Δbusy = %v, want 500ms (50 ticks)", d)
	}
	if d := r1.Total - r0.Total; d != time.Second {
		t.Errorf("Δtotal = %v, want 1s (100 ticks)", d)
	}
	if got := Percent(r0, r1); got != 50 {
		t.Errorf("Percent = %v, want 50", got)
	}
}

func TestSystemErrors(t *testing.T) {
	proc := t.TempDir()
	if _, err := NewSampler(Source{Kind: KindSystem}, Options{ProcRoot: proc}); err == nil || !strings.Contains(err.Error(), filepath.Join(proc, "stat")) {
		t.Errorf("no /proc/stat: err %v, want one naming the file", err)
	}
	write(t, filepath.Join(proc, "stat"), "intr 1\n")
	if _, err := NewSampler(Source{Kind: KindSystem}, Options{ProcRoot: proc}); err == nil {
		t.Error("a /proc/stat without a cpu line was accepted")
	}
	if _, err := NewSampler(Source{Kind: "bogus"}, Options{ProcRoot: proc}); err == nil {
		t.Error("a bogus source was accepted")
	}
}

func TestProcessSumsSameComm(t *testing.T) {
	proc := t.TempDir()
	write(t, filepath.Join(proc, "stat"), procStatFile(1, 1, 1, 1, 0, 0, 0, 0))
	weird := "a) (b c"
	set := func(pid int, comm string, utime, stime, start uint64) {
		dir := filepath.Join(proc, fmt.Sprint(pid))
		write(t, filepath.Join(dir, "comm"), comm+"\n")
		write(t, filepath.Join(dir, "stat"), pidStatFile(pid, comm, utime, stime, start))
	}
	set(10, "kamailio", 100, 50, 1000)
	set(11, "kamailio", 300, 200, 1001)
	set(12, "kamailio2", 999, 999, 1002)
	set(13, weird, 10, 10, 1003)
	set(14, "kamailio ", 999, 999, 1004) // a trailing space is a different comm
	write(t, filepath.Join(proc, "self", "comm"), "kamailio\n")
	clk := &fakeClock{t: time.Unix(5000, 0)}

	s, err := NewSampler(Source{Kind: KindProcess, Name: "kamailio"}, Options{ProcRoot: proc, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewSampler(Source{Kind: KindProcess, Name: weird}, Options{ProcRoot: proc, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Second)
	set(10, "kamailio", 140, 70, 1000)  // +60
	set(11, "kamailio", 330, 210, 1001) // +40
	set(12, "kamailio2", 5000, 5000, 1002)
	set(13, weird, 40, 30, 1003) // +50
	set(14, "kamailio ", 5000, 5000, 1004)
	r, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	// 100 ticks of 2 CPUs × 1 s.
	if r.Busy != time.Second || r.Total != 2*time.Second {
		t.Errorf("kamailio: busy %v total %v, want 1s of 2s", r.Busy, r.Total)
	}
	if got := Percent(Reading{}, r); got != 50 {
		t.Errorf("kamailio: Percent = %v, want 50", got)
	}
	rw, err := w.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if got := Percent(Reading{}, rw); got != 25 {
		t.Errorf("%q: Percent = %v, want 25 (busy %v of %v)", weird, got, rw.Busy, rw.Total)
	}
}

func TestProcessComesAndGoes(t *testing.T) {
	proc := t.TempDir()
	write(t, filepath.Join(proc, "stat"), procStatFile(1, 1, 1, 1, 0, 0, 0, 0))
	set := func(pid int, utime, stime, start uint64) {
		dir := filepath.Join(proc, fmt.Sprint(pid))
		write(t, filepath.Join(dir, "comm"), "worker\n")
		write(t, filepath.Join(dir, "stat"), pidStatFile(pid, "worker", utime, stime, start))
	}
	clk := &fakeClock{t: time.Unix(5000, 0)}
	src := Source{Kind: KindProcess, Name: "worker"}

	// No process yet is no error: it reads 0 busy.
	s, err := NewSampler(src, Options{ProcRoot: proc, Now: clk.now})
	if err != nil {
		t.Fatalf("no process yet: %v", err)
	}
	clk.advance(time.Second)
	r0, err := s.Sample()
	if err != nil || r0.Busy != 0 || r0.Total != 2*time.Second {
		t.Fatalf("no process: %+v, %v; want 0 busy of 2s", r0, err)
	}

	// Two start; being new, all their time is theirs since the last sample.
	set(20, 30, 10, 500)
	set(21, 400, 100, 501)
	clk.advance(time.Second)
	r1, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if d := r1.Busy - r0.Busy; d != 5400*time.Millisecond {
		t.Errorf("two new processes: Δbusy %v, want 5.4s", d)
	}

	// 21, the big one, exits; 20 works 50 ticks. A PID listed but gone
	// before its comm or stat is read is skipped, not an error.
	if err := os.RemoveAll(filepath.Join(proc, "21")); err != nil {
		t.Fatal(err)
	}
	set(20, 60, 30, 500)
	if err := os.MkdirAll(filepath.Join(proc, "22"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(proc, "23", "comm"), "worker\n")
	clk.advance(time.Second)
	r2, err := s.Sample()
	if err != nil {
		t.Fatalf("a process went away: %v", err)
	}
	if got := Percent(r1, r2); got != 25 {
		t.Errorf("after an exit: Percent %v, want 25 (Δbusy %v of %v)", got, r2.Busy-r1.Busy, r2.Total-r1.Total)
	}

	// PID 20 is reused by a new process (new start time) with 8 ticks.
	set(20, 5, 3, 900)
	clk.advance(time.Second)
	r3, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if d := r3.Busy - r2.Busy; d != 80*time.Millisecond {
		t.Errorf("reused PID: Δbusy %v, want 80ms", d)
	}
	if got := Percent(r2, r3); got < 0 || got > 100 {
		t.Errorf("reused PID: Percent %v out of range", got)
	}
}

func TestCgroup(t *testing.T) {
	proc, cg := t.TempDir(), t.TempDir()
	write(t, filepath.Join(proc, "stat"), procStatFile(1, 1, 1, 1, 0, 0, 0, 0))
	stat := filepath.Join(cg, "system.slice", "kamailio.service", "cpu.stat")
	file := func(usage, user, system uint64) string {
		return fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnice_usec 0\ncore_sched.force_idle_usec 0\n", usage, user, system)
	}
	write(t, stat, file(99000000, 1000000, 500000))
	clk := &fakeClock{t: time.Unix(5000, 0)}
	src, err := ParseSource("cgroup:system.slice/kamailio.service")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(src, Options{ProcRoot: proc, CgroupRoot: cg, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Second)
	write(t, stat, file(999000000, 1300000, 700000))
	r1, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if r1.Busy != 500*time.Millisecond || r1.Total != 2*time.Second {
		t.Errorf("busy %v total %v, want 500ms of 2s", r1.Busy, r1.Total)
	}
	if got := Percent(Reading{}, r1); got != 25 {
		t.Errorf("Percent = %v, want 25", got)
	}

	// The cgroup is made again and counts from 0: nothing, not a negative.
	clk.advance(time.Second)
	write(t, stat, file(1000, 1000, 0))
	r2, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if r2.Busy != r1.Busy {
		t.Errorf("counter reset: busy went %v → %v", r1.Busy, r2.Busy)
	}
	clk.advance(time.Second)
	write(t, stat, file(1000, 501000, 500000))
	r3, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if got := Percent(r2, r3); got != 50 {
		t.Errorf("after reset: Percent = %v, want 50", got)
	}
}

func TestCgroupErrors(t *testing.T) {
	proc, cg, outside := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(proc, "stat"), procStatFile(1, 1, 1, 1, 0, 0, 0, 0))
	write(t, filepath.Join(cg, "v1", "cpu.stat"), "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n")
	write(t, filepath.Join(outside, "cpu.stat"), "user_usec 1\nsystem_usec 1\n")
	if err := os.Symlink(outside, filepath.Join(cg, "escape")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(cg, "file"), "")
	for _, name := range []string{"missing", "v1", "escape", "file"} {
		_, err := NewSampler(Source{Kind: KindCgroup, Name: name}, Options{ProcRoot: proc, CgroupRoot: cg})
		if err == nil {
			t.Errorf("cgroup %q accepted", name)
		} else if !strings.Contains(err.Error(), filepath.Join(cg, name)) {
			t.Errorf("cgroup %q: error %q does not name the path", name, err)
		}
	}
	if _, err := NewSampler(Source{Kind: KindCgroup, Name: "../x"}, Options{ProcRoot: proc, CgroupRoot: cg}); err == nil {
		t.Error("cgroup ../x accepted")
	}
}
