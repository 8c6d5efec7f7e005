package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// plantLink makes path a symbolic link to a file of the test's, as
// another user would plant one, and returns that file.
func plantLink(t *testing.T, path string) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	return victim
}

func requireVictimUntouched(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Errorf("the planted link's target holds %q (%v): the daemon wrote through the link", b, err)
	}
}

// TestDaemonRejectsLogSymlink (docs/design.md, "Files"): a daemon whose
// rejects log is a planted symbolic link refuses to start, says why, and
// attaches nothing; one whose log is replaced by a link under it keeps
// writing to the file it has after SIGHUP, and warns. The link's target
// is never written.
func TestDaemonRejectsLogSymlink(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, lifeConfig(tb, 1, ""))
	planted := filepath.Join(t.TempDir(), "rejects.jsonl")
	victim := plantLink(t, planted)
	_, stderr, err := tb.Cacctl(t, "run", "--config", cfg, "--rejects-log", planted)
	if err == nil || !strings.Contains(stderr, "rejects log") || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("run with a planted rejects log: %v: %s", err, stderr)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("the refused daemon attached program %d", id)
	}
	requireVictimUntouched(t, victim)

	d := tb.StartDaemon(t, cfg)
	if err := os.Remove(d.RejectsLog); err != nil {
		t.Fatal(err)
	}
	victim = plantLink(t, d.RejectsLog)
	if err := d.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "reopen the rejects log") })
	if !strings.Contains(d.Log.String(), "symbolic link") {
		t.Errorf("the warning does not say why:\n%s", d.Log.String())
	}
	for range 3 { // rejects, for the journal to write somewhere
		tb.PadiOutcome(t)
	}
	requireVictimUntouched(t, victim)
}

// TestDetachLeavesNothing: a daemon killed leaves its lock file; the
// detach of the last interface removes it with the state directory. A
// daemon stopped with --detach-on-exit leaves nothing either.
func TestDetachLeavesNothing(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, lifeConfig(tb, 1, ""))
	lock := api.PathsOf(tb.State).Lock
	d := tb.StartDaemon(t, cfg)
	d.Kill()
	d.Wait()
	if _, err := os.Lstat(lock); err != nil {
		t.Fatalf("a killed daemon left no lock file (%v): the test would prove nothing", err)
	}
	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach: %v: %s", err, stderr)
	}
	requireNothingLeft(t, tb, "a killed daemon and a detach")

	d = tb.StartDaemon(t, cfg, "--detach-on-exit")
	d.Signal(syscall.SIGTERM)
	if err := d.Wait(); err != nil {
		t.Fatalf("SIGTERM with --detach-on-exit: %v", err)
	}
	requireNothingLeft(t, tb, "a daemon stopped with --detach-on-exit")
}
