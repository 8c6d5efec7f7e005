package daemon

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// runOnce runs `cacctl run` with caps (setpriv's list, as in
// harness.DaemonCaps) to its end, as a service manager would start it,
// and returns its error and output.
func runOnce(t *testing.T, tb *harness.Testbed, caps, cfg string) (error, string) {
	t.Helper()
	args := []string{"setpriv", "--bounding-set=-all," + caps, "--inh-caps=-all," + caps, "--ambient-caps=-all," + caps, "--",
		harness.CacctlBin, "--netns", tb.Box, "--state-dir", tb.State, "run", "--config", cfg}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return err, string(out)
}

// TestRefusedStartLeavesNothing: a `cacctl run` that is refused, here for
// want of CAP_NET_RAW to send the 503s of action: reject, is refused
// before it attaches anything. Started again and again, as
// Restart=on-failure does, it never leaves a filter on the interface; and
// an interface attached before keeps the limits it had.
func TestRefusedStartLeavesNothing(t *testing.T) {
	tb := harness.NewTestbed(t)
	reject := harness.WriteConfig(t, lifeConfig(tb, 1, "")+"  sip-invite: {action: reject, per-source: {cps: 1, burst: 1}}\n")
	const noRaw = "+net_admin,+sys_admin,+bpf,+chown"
	for i := range 3 {
		err, out := runOnce(t, tb, noRaw, reject)
		if err == nil || !strings.Contains(out, "CAP_NET_RAW") {
			t.Fatalf("start %d without CAP_NET_RAW: %v\n%s", i, err, out)
		}
		if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
			t.Fatalf("after refused start %d the interface has XDP program %d\n%s", i, id, out)
		}
		if strings.Contains(out, "attached") {
			t.Errorf("refused start %d logs an attach:\n%s", i, out)
		}
	}

	// Attached by hand with burst 3; the refused start keeps those limits.
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", harness.WriteConfig(t, lifeConfig(tb, 3, ""))); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	id := harness.XdpProgID(t, tb.Box, tb.BoxIface)
	if err, out := runOnce(t, tb, noRaw, reject); err == nil {
		t.Fatalf("start without CAP_NET_RAW over an attachment: not refused\n%s", out)
	}
	if got := harness.XdpProgID(t, tb.Box, tb.BoxIface); got != id {
		t.Errorf("the refused start changed the interface's program: %d, was %d", got, id)
	}
	for i, want := range []string{"admitted", "admitted", "admitted", "class"} {
		if got := tb.PadiOutcome(t); got != want {
			t.Errorf("PADI %d after the refused start: %s, want %s (the burst of 3 attached before)", i, got, want)
		}
	}
}

// TestRefusedStartMetricsTaken: a metrics address another process holds
// refuses the start before anything is attached.
func TestRefusedStartMetricsTaken(t *testing.T) {
	tb := harness.NewTestbed(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := harness.WriteConfig(t, lifeConfig(tb, 1, "metrics: {listen: \""+l.Addr().String()+"\"}\n"))
	err, out := runOnce(t, tb, "+net_admin,+sys_admin,+bpf,+net_raw,+chown", cfg)
	if err == nil || !strings.Contains(out, "metrics.listen") {
		t.Fatalf("start on a metrics address taken: %v\n%s", err, out)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("after the refused start the interface has XDP program %d\n%s", id, out)
	}
}
