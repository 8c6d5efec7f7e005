package daemon

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestDaemonLeastPrivilege: `cacctl run` runs with CAP_NET_ADMIN,
// CAP_SYS_ADMIN, CAP_BPF, CAP_NET_RAW and CAP_CHOWN alone, as in every daemon test, and attaches,
// enforces and takes an apply; its API socket and the pins it makes are
// root's alone, and a user who is not root is told to use sudo.
func TestDaemonLeastPrivilege(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	const want = 1<<0 | 1<<12 | 1<<13 | 1<<21 | 1<<39 // CAP_CHOWN, CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF
	if !strings.Contains(string(status), fmt.Sprintf("CapEff:\t%016x\n", want)) {
		t.Fatalf("the daemon does not run with those five capabilities alone:\n%s", status)
	}
	for i, want := range []string{"admitted", "class"} {
		if got := tb.PadiOutcome(t); got != want {
			t.Errorf("PADI %d: %s, want %s", i, got, want)
		}
	}
	if _, stderr, err := tb.Cacctl(t, "apply", "--config", harness.WriteConfig(t, lifeConfig(tb, 5, ""))); err != nil {
		t.Fatalf("apply: %v: %s", err, stderr)
	}
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Errorf("PADI after an apply to burst 5: %s", got)
	}

	rootOnly := func(path string, fi fs.FileInfo) {
		t.Helper()
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&0o077 != 0 || st.Uid != 0 {
			t.Errorf("%s: mode %v, owner %d: not root's alone", path, fi.Mode(), st.Uid)
		}
	}
	// The daemon's directory, its socket and its lock.
	own := api.PathsOf(tb.State)
	if _, err := os.Lstat(own.Socket); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(own.Dir, func(path string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rootOnly(path, fi)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(tb.State, func(path string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if path != tb.State { // the test made that one
			rootOnly(path, fi)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		harness.CacctlBin, "--state-dir", tb.State, "apply", "--config", "/dev/null").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run it with sudo") || strings.Contains(string(out), "goroutine") {
		t.Errorf("apply as nobody: %v\n%s", err, out)
	}
}
