package daemon

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestDaemonInterfaceRenamed: the configured interface is renamed and a
// new one of its name appears. The filter follows the name: the new
// interface gets it, with the state it had (the bucket stays spent), and
// the renamed one, no longer in the file, is let go.
func TestDaemonInterfaceRenamed(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	tb.PadiOutcome(t)
	renamed := testenv.Unique("xcr")
	ipCmd(t, "-n", tb.Box, "link", "set", tb.BoxIface, "down")
	ipCmd(t, "-n", tb.Box, "link", "set", tb.BoxIface, "name", renamed)
	ipCmd(t, "-n", tb.Box, "link", "set", renamed, "up")
	tb.NewInterface(t, "a new interface took the name")
	testenv.WaitFor(t, func() bool { return harness.XdpProgID(t, tb.Box, renamed) == 0 })
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "took over") })
	if !strings.Contains(d.Log.String(), "program=reattached") {
		t.Errorf("the daemon's log does not say it attached again:\n%s", d.Log.String())
	}
}

// TestDaemonNetnsRecreated: the daemon's network namespace is deleted and
// made again, with an interface of the configured name: the daemon
// follows the new namespace and attaches it, with the state it had.
func TestDaemonNetnsRecreated(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	tb.PadiOutcome(t)
	// The daemon tells the namespaces apart by their ids, not by seeing
	// the name gone: nothing to wait for between the two.
	ipCmd(t, "netns", "del", tb.Box)
	ipCmd(t, "netns", "add", tb.Box) // removed again by Netns's cleanup
	tb.NewInterface(t, "the namespace was made again")
	if !strings.Contains(d.Log.String(), "made again") {
		t.Errorf("the daemon's log does not say it follows the new namespace:\n%s", d.Log.String())
	}
}
