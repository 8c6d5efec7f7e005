package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// cacctlBin is the cacctl binary built for this run.
var cacctlBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "xdpcac-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cacctlBin = filepath.Join(dir, "cacctl")
	// XDPCAC_CACCTL names a cacctl built beforehand, for a machine without
	// Go such as the kernel-floor VM of tests/kernels.
	if bin := os.Getenv("XDPCAC_CACCTL"); bin != "" {
		cacctlBin = bin
	} else if out, err := exec.Command("go", "build", "-o", cacctlBin, "../cmd/cacctl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build cacctl: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// cacctl runs the binary and returns its standard output and error.
func cacctl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(cacctlBin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// stateDir is a fresh directory on bpffs for one test's attachments.
func stateDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("/sys/fs/bpf", testenv.Unique("xdpcac-t-"))
	t.Cleanup(func() {
		os.RemoveAll(dir)
		removeDaemonFiles(dir)
	})
	return dir
}

// daemonFiles is how cacctl names what a daemon of stateDir keeps in
// /run/xdpcac, less the suffix: .sock, .lock and its statuses.
func daemonFiles(stateDir string) string {
	return filepath.Join("/run/xdpcac", "api"+strings.ReplaceAll(filepath.Clean(stateDir), "/", "_"))
}

// removeDaemonFiles removes what a daemon of stateDir leaves in
// /run/xdpcac: its lock file, its statuses, and the socket of one that was
// killed.
func removeDaemonFiles(stateDir string) {
	left, _ := filepath.Glob(daemonFiles(stateDir) + ".*")
	for _, f := range left {
		os.Remove(f)
	}
}

func writeConfig(t testing.TB, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cac.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
