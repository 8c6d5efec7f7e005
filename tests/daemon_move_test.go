package tests

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// waitAttached waits up to three seconds for an XDP program on iface in
// ns.
func waitAttached(t *testing.T, ns, iface, after string) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if id := xdpProgID(t, ns, iface); id != 0 {
			t.Logf("attached %v after %s: program %d", time.Since(start), after, id)
			return
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("no XDP program on %s three seconds after %s", iface, after)
		}
	}
}

// newInterface makes a new veth of the box's interface name, to a new
// peer, and requires the daemon to attach it within three seconds with
// the state it had: a PADI class bucket of burst 1, spent before.
func (tb *testbed) newInterface(t *testing.T, after string) {
	t.Helper()
	newPeer := testenv.Unique("xcp")
	testenv.VethNamed(t, tb.box, tb.peer, tb.boxIface, newPeer)
	waitAttached(t, tb.box, tb.boxIface, after)
	tb.peerIfc = newPeer
	if got := tb.padiOutcome(t); got != "class" {
		t.Errorf("a PADI after %s: %s, want class (the burst of 1 stays spent)", after, got)
	}
}

// TestDaemonInterfaceRenamed: the configured interface is renamed and a
// new one of its name appears. The filter follows the name: the new
// interface gets it, with the state it had (the bucket stays spent), and
// the renamed one, no longer in the file, is let go.
func TestDaemonInterfaceRenamed(t *testing.T) {
	tb := newTestbed(t)
	d := tb.startDaemon(t, writeConfig(t, lifeConfig(tb, 1, "")))
	tb.padiOutcome(t)
	renamed := testenv.Unique("xcr")
	ipCmd(t, "-n", tb.box, "link", "set", tb.boxIface, "down")
	ipCmd(t, "-n", tb.box, "link", "set", tb.boxIface, "name", renamed)
	ipCmd(t, "-n", tb.box, "link", "set", renamed, "up")
	tb.newInterface(t, "a new interface took the name")
	waitFor(t, func() bool { return xdpProgID(t, tb.box, renamed) == 0 })
	waitFor(t, func() bool { return strings.Contains(d.log.String(), "took over") })
	if !strings.Contains(d.log.String(), "program=reattached") {
		t.Errorf("the daemon's log does not say it attached again:\n%s", d.log.String())
	}
}

// TestDaemonNetnsRecreated: the daemon's network namespace is deleted and
// made again, with an interface of the configured name: the daemon
// follows the new namespace and attaches it, with the state it had.
func TestDaemonNetnsRecreated(t *testing.T) {
	tb := newTestbed(t)
	d := tb.startDaemon(t, writeConfig(t, lifeConfig(tb, 1, "")))
	tb.padiOutcome(t)
	ipCmd(t, "netns", "del", tb.box)
	time.Sleep(300 * time.Millisecond)
	ipCmd(t, "netns", "add", tb.box) // removed again by Netns's cleanup
	tb.newInterface(t, "the namespace was made again")
	if !strings.Contains(d.log.String(), "made again") {
		t.Errorf("the daemon's log does not say it follows the new namespace:\n%s", d.log.String())
	}
}
