package tests

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// daemonCaps are the capabilities `cacctl run` is tested with: deploy/'s
// unit grants these and CAP_PERFMON, for which CAP_SYS_ADMIN stands in.
// CAP_NET_RAW sends the 503s of action: reject.
var daemonCaps = []string{"setpriv",
	"--bounding-set=-all,+net_admin,+sys_admin,+bpf,+net_raw", "--inh-caps=-all,+net_admin,+sys_admin,+bpf,+net_raw",
	"--ambient-caps=-all,+net_admin,+sys_admin,+bpf,+net_raw", "--"}

// TestDaemonLeastPrivilege: `cacctl run` runs with CAP_NET_ADMIN,
// CAP_SYS_ADMIN, CAP_BPF and CAP_NET_RAW alone, as in every daemon test, and attaches,
// enforces and takes an apply; its API socket and the pins it makes are
// root's alone, and a user who is not root is told to use sudo.
func TestDaemonLeastPrivilege(t *testing.T) {
	tb := newTestbed(t)
	d := tb.startDaemon(t, writeConfig(t, lifeConfig(tb, 1, "")))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	const want = 1<<12 | 1<<13 | 1<<21 | 1<<39 // CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN, CAP_BPF
	if !strings.Contains(string(status), fmt.Sprintf("CapEff:\t%016x\n", want)) {
		t.Fatalf("the daemon does not run with those four capabilities alone:\n%s", status)
	}
	for i, want := range []string{"admitted", "class"} {
		if got := tb.padiOutcome(t); got != want {
			t.Errorf("PADI %d: %s, want %s", i, got, want)
		}
	}
	if _, stderr, err := tb.cacctl(t, "apply", "--config", writeConfig(t, lifeConfig(tb, 5, ""))); err != nil {
		t.Fatalf("apply: %v: %s", err, stderr)
	}
	if got := tb.padiOutcome(t); got != "admitted" {
		t.Errorf("PADI after an apply to burst 5: %s", got)
	}

	var fi fs.FileInfo
	socket := daemonFiles(tb.state) + ".sock"
	rootOnly := func(path string, fi fs.FileInfo) {
		t.Helper()
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&0o077 != 0 || st.Uid != 0 {
			t.Errorf("%s: mode %v, owner %d: not root's alone", path, fi.Mode(), st.Uid)
		}
	}
	fi, err = os.Stat(socket)
	if err != nil {
		t.Fatal(err)
	}
	rootOnly(socket, fi)
	err = filepath.Walk(tb.state, func(path string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if path != tb.state { // the test made that one
			rootOnly(path, fi)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		cacctlBin, "--state-dir", tb.state, "apply", "--config", "/dev/null").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run it with sudo") || strings.Contains(string(out), "goroutine") {
		t.Errorf("apply as nobody: %v\n%s", err, out)
	}
}
