package tests

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// inForce reads the policy the testbed's fast path holds.
func (tb *testbed) inForce(t *testing.T) maps.InForce {
	t.Helper()
	p, err := loader.OpenShared(tb.state)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in, err := maps.ReadInForce(maps.PolicyMapsOf(&p.XdpMaps))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestDaemonKilledDuringApply: SIGKILL at points spread over an apply
// through the daemon leaves in force either the whole old policy or the
// whole new one, never a mix; a restarted daemon puts its own file back.
func TestDaemonKilledDuringApply(t *testing.T) {
	tb := newTestbed(t)
	accounts := func(cps, burst string) string {
		return "customers:\n  - name: c1\n    cps: " + cps + "\n    burst: " + burst + "\n    accounts:\n" +
			"      - {name: a1, source: 198.51.100.10, cps: " + cps + ", burst: " + burst + "}\n" +
			"      - {name: a2, source: 2001:db8::/48}\n"
	}
	oldCfg := writeConfig(t, lifeConfig(tb, 2, accounts("5", "10")))
	newCfg := writeConfig(t, lifeConfig(tb, 10, accounts("50", "100")+
		"environment: {cps: 500, burst: 50}\n"+
		"call-admission: |\n  call admission limit 1000\n  call admission pppoe 10 5\n"))

	d := tb.startDaemon(t, oldCfg)
	old := tb.inForce(t)
	start := time.Now()
	tb.postApply(newCfg)
	took := time.Since(start) // the slot switches a settling time before the answer
	applied := tb.inForce(t)
	if reflect.DeepEqual(old, applied) {
		t.Fatal("the two files give the same policy: the test would prove nothing")
	}

	outcome := map[string]int{}
	// Kills spread over the time an apply took: reading and checking the
	// file, writing the slot not in force, switching, settling.
	for i := range 8 {
		delay := took * time.Duration(i) / 7
		d.cmd.Process.Kill()
		d.cmd.Wait()
		d = tb.startDaemon(t, oldCfg)
		if got := tb.inForce(t); !reflect.DeepEqual(got, old) {
			t.Fatalf("a restarted daemon left in force %+v, want its file's %+v", got, old)
		}
		// Straight to the daemon's socket: cacctl apply would write the
		// maps itself once the daemon is gone.
		answered := make(chan struct{})
		go func() { tb.postApply(newCfg); close(answered) }()
		time.Sleep(delay)
		d.cmd.Process.Kill()
		d.cmd.Wait()
		<-answered
		switch got := tb.inForce(t); {
		case reflect.DeepEqual(got, old):
			outcome["old"]++
		case reflect.DeepEqual(got, applied):
			outcome["new"]++
		default:
			t.Fatalf("killed %v into an apply, the fast path holds a mix:\n%+v\nold %+v\nnew %+v",
				delay, got, old, applied)
		}
		if got := tb.padiOutcome(t); got != "admitted" && got != "class" {
			t.Errorf("a PADI after the kill: %s", got)
		}
	}
	t.Logf("an apply took %v; after a kill during one: %v", took, outcome)
}

// postApply asks the testbed's daemon, on its API socket, to apply cfg,
// and ignores the answer: the daemon may die before it gives one.
func (tb *testbed) postApply(cfg string) {
	socket := daemonFiles(tb.state) + ".sock"
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}
	resp, err := c.Post("http://xdpcac/v1/apply", "application/json", strings.NewReader(`{"config": "`+cfg+`"}`))
	if err == nil {
		resp.Body.Close()
	}
}

// TestDaemonOutlivesPins: the bpffs that holds the pins is unmounted under
// a running daemon; the daemon holds the links, so the filter stays on
// while it runs. Once a bpffs is mounted there again the daemon pins the
// same state again: the CLI reads the counters from before, the bucket is
// still spent, and a restarted daemon takes over the same program.
func TestDaemonOutlivesPins(t *testing.T) {
	tb := newTestbed(t)
	// A bpffs of this test's own, so that unmounting it touches nothing
	// else on the machine.
	tb.state = t.TempDir()
	t.Cleanup(func() { removeDaemonFiles(tb.state) })
	mounted := false
	mount := func() {
		t.Helper()
		if out, err := exec.Command("mount", "-t", "bpf", "bpf", tb.state).CombinedOutput(); err != nil {
			t.Fatalf("mount a bpffs: %v: %s", err, out)
		}
		mounted = true
	}
	mount()
	t.Cleanup(func() {
		if mounted {
			exec.Command("umount", tb.state).Run()
		}
	})
	d := tb.startDaemon(t, writeConfig(t, lifeConfig(tb, 1, "")))
	if got := tb.padiOutcome(t); got != "admitted" {
		t.Fatalf("the first PADI: %s", got)
	}
	id := xdpProgID(t, tb.box, tb.boxIface)
	if out, err := exec.Command("umount", tb.state).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	mounted = false
	waitFor(t, func() bool { return strings.Contains(d.log.String(), "the pins are gone") })
	_, stderr, err := tb.cacctl(t, "apply", "--config", writeConfig(t, lifeConfig(tb, 5, "")))
	if err == nil || !strings.Contains(stderr, "pins") {
		t.Errorf("apply with the pins gone: %v: %s", err, stderr)
	}
	if got := xdpProgID(t, tb.box, tb.boxIface); got != id {
		t.Fatalf("with its pins gone the XDP program is %d, was %d: the filter came off", got, id)
	}
	if err := d.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the daemon went away with its pins: %v", err)
	}

	mount()
	waitFor(t, func() bool { return strings.Contains(d.log.String(), "pinned again") })
	if padi := tb.stats(t).Classes["pppoe-padi"]; padi.Seen != 1 || padi.Admitted != 1 {
		t.Errorf("counters pinned again: %+v, want the one PADI from before", padi)
	}
	if got := tb.padiOutcome(t); got != "class" {
		t.Errorf("a PADI after the pins came back: %s, want class (the burst of 1 stays spent)", got)
	}
	d.cmd.Process.Kill()
	d.cmd.Wait()
	d = tb.startDaemon(t, writeConfig(t, lifeConfig(tb, 1, "")))
	if got := xdpProgID(t, tb.box, tb.boxIface); got != id || !strings.Contains(d.log.String(), "took over") {
		t.Errorf("a restarted daemon runs program %d (was %d); its log:\n%s", got, id, d.log.String())
	}
	if padi := tb.stats(t).Classes["pppoe-padi"]; padi.Seen != 2 {
		t.Errorf("counters after the restart: %+v, want the two PADIs", padi)
	}
}
