package cpu

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// burn keeps one goroutine spinning until the test ends.
func burn(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	go func() {
		defer close(done)
		x := uint64(1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for range 1 << 16 {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}
	}()
}

// sampleAcross reads the source, lets 300 ms of work pass, and reads again.
func sampleAcross(t *testing.T, src Source, opt Options, work func(*testing.T)) float64 {
	t.Helper()
	s, err := NewSampler(src, opt)
	if err != nil {
		t.Fatal(err)
	}
	r0, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if work != nil {
		work(t)
	}
	time.Sleep(300 * time.Millisecond)
	r1, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: busy %v of %v", src, r1.Busy-r0.Busy, r1.Total-r0.Total)
	return Percent(r0, r1)
}

func TestRealSystem(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc:", err)
	}
	// No upper figure: the machine is shared and noisy.
	if got := sampleAcross(t, Source{Kind: KindSystem}, Options{}, burn); !(got > 0) {
		t.Errorf("system Percent = %v while burning, want > 0", got)
	}
}

func TestRealProcess(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc/self/comm:", err)
	}
	src, err := ParseSource("process:" + strings.TrimSuffix(string(comm), "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sampleAcross(t, src, Options{}, burn); !(got > 0) {
		t.Errorf("%s Percent = %v while this process burns, want > 0", src, got)
	}
}

func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
		t.Fatalf("XDPCAC_REQUIRE_BPF=1 but this test cannot run: %s", reason)
	}
	t.Skip(reason)
}

// cgroup2Root is the cgroup2 mount, if there is one.
func cgroup2Root() (string, bool) {
	r := Cgroup2Root()
	_, err := os.Stat(filepath.Join(r, "cgroup.controllers"))
	return r, err == nil
}

func TestRealCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "making a cgroup needs root")
	}
	root, ok := cgroup2Root()
	if !ok {
		skipOrFail(t, "no cgroup2 mount under /sys/fs/cgroup")
	}
	name := fmt.Sprintf("xdpcac-cputest-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		skipOrFail(t, fmt.Sprintf("cannot make a cgroup: %v", err))
	}
	t.Cleanup(func() {
		// The kernel lets a cgroup go only once its last task is reaped,
		// which can lag the child's Wait by a moment.
		var err error
		for range 50 {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("remove cgroup %s: %v", dir, err)
	})

	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatalf("move the child into %s: %v", dir, err)
	}
	src, err := ParseSource("cgroup:" + name)
	if err != nil {
		t.Fatal(err)
	}
	if got := sampleAcross(t, src, Options{CgroupRoot: root}, nil); !(got > 0) {
		t.Errorf("%s Percent = %v with a spinning child inside, want > 0", src, got)
	}
}
