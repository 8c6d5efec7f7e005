package daemon

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestAutoModeJumboMTU: on a veth of MTU 9000 the driver refuses the
// program in native mode (it has no XDP frags support: ERANGE). --mode
// auto attaches it in generic mode instead and says why; --mode native
// refuses with the kernel's reason. So does the daemon, in its log.
func TestAutoModeJumboMTU(t *testing.T) {
	tb := harness.NewTestbed(t)
	for _, end := range [][2]string{{tb.Box, tb.BoxIface}, {tb.Peer, tb.PeerIfc}} {
		if out, err := exec.Command("ip", "-n", end[0], "link", "set", end[1], "mtu", "9000").CombinedOutput(); err != nil {
			t.Fatalf("MTU 9000 on %s: %v: %s", end[1], err, out)
		}
	}
	cfg := harness.WriteConfig(t, lifeConfig(tb, 1, ""))
	_, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg, "--mode", "native")
	if err == nil || !strings.Contains(stderr, "numerical result out of range") {
		t.Errorf("native at MTU 9000: %v: %s", err, stderr)
	}
	out, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg, "--mode", "auto")
	if err != nil {
		t.Fatalf("auto at MTU 9000: %v: %s", err, stderr)
	}
	if !strings.Contains(out, "generic mode") || !strings.Contains(stderr, "MTU of 9000") || !strings.Contains(stderr, "generic (skb) mode") {
		t.Errorf("auto at MTU 9000 said:\n%s%s", out, stderr)
	}
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Errorf("a PADI through the generic-mode filter: %s", got)
	}
	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach: %v: %s", err, stderr)
	}

	d := tb.StartDaemon(t, cfg) // the file's interface has no mode: auto
	if log := d.Log.String(); !strings.Contains(log, "MTU of 9000") || !strings.Contains(log, "mode=generic") {
		t.Errorf("the daemon's log does not say it fell back to generic mode:\n%s", log)
	}
}
