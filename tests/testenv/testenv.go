package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/rlimit"
)

// RequireBPF skips t when the process cannot load BPF programs, with the
// reason, or fails it when XDPCAC_REQUIRE_BPF=1 (as `make test` and CI set):
// there a skipped kernel test would be a test that did not run.
func RequireBPF(t testing.TB) {
	t.Helper()
	skipShort(t)
	reason := ""
	switch {
	case os.Geteuid() != 0:
		reason = "needs root to load BPF programs and create network namespaces"
	default:
		if err := rlimit.RemoveMemlock(); err != nil {
			reason = "cannot lift the memlock limit: " + err.Error()
		}
	}
	if reason != "" {
		CannotRun(t, reason)
	}
}

// RequireRoot skips t when the process is not root, saying what for, or
// fails it when XDPCAC_REQUIRE_BPF=1, as RequireBPF does: for tests that
// need root to set up namespaces but load no BPF program.
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	skipShort(t)
	if os.Geteuid() == 0 {
		return
	}
	CannotRun(t, "needs root to "+what)
}

// skipShort skips t under -short, whatever XDPCAC_REQUIRE_BPF says: make
// check asks so for the unit tests alone, which must take seconds even
// under sudo, where these tests would otherwise run; make test runs them.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a test that needs root is left to make test")
	}
}

// RequireTool returns the path of program name (on PATH, or in /usr/sbin
// or /sbin, which a user's PATH may lack), or, as RequireBPF, skips t or
// fails it under XDPCAC_REQUIRE_BPF=1, saying which Debian package has it.
func RequireTool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if _, serr := os.Stat(filepath.Join(dir, name)); serr == nil {
			return filepath.Join(dir, name)
		}
	}
	CannotRun(t, fmt.Sprintf("%s not found (Debian package %s; tests/provision.sh installs it): %v", name, debianPackage, err))
	return ""
}

// CannotRun is the one privilege gate of the tests: it skips t with the
// reason it cannot run, or fails it when XDPCAC_REQUIRE_BPF=1 (as `make
// test`, CI and the kernel-floor VM set), where a skipped test would be a
// test that did not run.
func CannotRun(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
		t.Fatalf("XDPCAC_REQUIRE_BPF=1 but this test cannot run: %s", reason)
	}
	t.Skip(reason)
}

// Unique returns prefix followed by random hex, at most 15 bytes long so that
// it fits an interface name.
func Unique(prefix string) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		panic(errors.Join(errors.New("crypto/rand"), err))
	}
	name := prefix + hex.EncodeToString(b)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}
