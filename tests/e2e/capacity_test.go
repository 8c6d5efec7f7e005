package e2e

import (
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestCapacityWithoutDaemon: attach and apply of a file with max-sessions
// say that no daemon gives sessions back while no cacctl run serves the
// state directory; a file without max-sessions says nothing of it.
func TestCapacityWithoutDaemon(t *testing.T) {
	tb := harness.NewTestbed(t)
	capped := harness.WriteConfig(t, harness.E2eConfig+
		"customers:\n  - {name: acme, accounts: [{name: pbx, source: 198.51.100.0/24, max-sessions: 3}]}\n")
	plain := harness.WriteConfig(t, harness.E2eConfig)
	const warning = "no cacctl run serves"
	_, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", capped)
	if err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	if !strings.Contains(stderr, warning) || !strings.Contains(stderr, "max-sessions") {
		t.Errorf("attach of a file with max-sessions, no daemon: stderr %q, want the warning", stderr)
	}
	if _, stderr, err = tb.Cacctl(t, "apply", "--config", plain); err != nil || strings.Contains(stderr, warning) {
		t.Errorf("apply of a file without max-sessions: %v, stderr %q, want no warning", err, stderr)
	}
	if _, stderr, err = tb.Cacctl(t, "apply", "--config", capped); err != nil || !strings.Contains(stderr, warning) {
		t.Errorf("apply of a file with max-sessions, no daemon: %v, stderr %q, want the warning", err, stderr)
	}
}
