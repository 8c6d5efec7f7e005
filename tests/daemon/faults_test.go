package daemon

import (
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestDaemonKilledDuringApply: SIGKILL at points spread over an apply
// through the daemon leaves in force either the whole old policy or the
// whole new one, never a mix; a restarted daemon puts its own file back.
func TestDaemonKilledDuringApply(t *testing.T) {
	tb := harness.NewTestbed(t)
	accounts := func(cps, burst string) string {
		return "customers:\n  - name: c1\n    cps: " + cps + "\n    burst: " + burst + "\n    accounts:\n" +
			"      - {name: a1, source: 198.51.100.10, cps: " + cps + ", burst: " + burst + "}\n" +
			"      - {name: a2, source: 2001:db8::/48}\n"
	}
	oldCfg := harness.WriteConfig(t, lifeConfig(tb, 2, accounts("5", "10")))
	newCfg := harness.WriteConfig(t, lifeConfig(tb, 10, accounts("50", "100")+
		"environment: {cps: 500, burst: 50}\n"+
		"call-admission: |\n  call admission limit 1000\n  call admission pppoe 10 5\n"))

	d := tb.StartDaemon(t, oldCfg)
	old := tb.InForce(t)
	start := time.Now()
	if !tb.PostApply(newCfg) {
		t.Fatal("the daemon did not answer the apply it was left to finish")
	}
	took := time.Since(start)
	applied := tb.InForce(t)
	if reflect.DeepEqual(old, applied) {
		t.Fatal("the two files give the same policy: the test would prove nothing")
	}

	outcome := map[string]int{}
	// Kills spread over the time an apply took: reading and checking the
	// file, writing the slot not in force, switching.
	for i := range 8 {
		delay := took * time.Duration(i) / 7
		d.Kill()
		d.Wait()
		d = tb.StartDaemon(t, oldCfg)
		if got := tb.InForce(t); !reflect.DeepEqual(got, old) {
			t.Fatalf("a restarted daemon left in force %+v, want its file's %+v", got, old)
		}
		// Straight to the daemon's socket: cacctl apply would write the
		// maps itself once the daemon is gone.
		answered := make(chan bool)
		go func() { answered <- tb.PostApply(newCfg) }()
		time.Sleep(delay)
		d.Kill()
		d.Wait()
		acked := <-answered
		switch got := tb.InForce(t); {
		case reflect.DeepEqual(got, old) && acked:
			t.Fatalf("killed %v into an apply the daemon had answered as done, the old policy is back in force", delay)
		case reflect.DeepEqual(got, old):
			outcome["old"]++
		case reflect.DeepEqual(got, applied):
			outcome["new"]++
		default:
			t.Fatalf("killed %v into an apply, the fast path holds a mix:\n%+v\nold %+v\nnew %+v",
				delay, got, old, applied)
		}
		if got := tb.PadiOutcome(t); got != "admitted" && got != "class" {
			t.Errorf("a PADI after the kill: %s", got)
		}
	}
	t.Logf("an apply took %v; after a kill during one: %v", took, outcome)
}

// TestDaemonOutlivesPins: the bpffs that holds the pins is unmounted under
// a running daemon; the daemon holds the links, so the filter stays on
// while it runs. Once a bpffs is mounted there again the daemon pins the
// same state again: the CLI reads the counters from before, the bucket is
// still spent, and a restarted daemon takes over the same program.
func TestDaemonOutlivesPins(t *testing.T) {
	tb := harness.NewTestbed(t)
	// A bpffs of this test's own, so that unmounting it touches nothing
	// else on the machine.
	tb.State = t.TempDir()
	t.Cleanup(func() { harness.RemoveDaemonFiles(tb.State) })
	mounted := false
	mount := func() {
		t.Helper()
		if out, err := exec.Command("mount", "-t", "bpf", "bpf", tb.State).CombinedOutput(); err != nil {
			t.Fatalf("mount a bpffs: %v: %s", err, out)
		}
		mounted = true
	}
	mount()
	t.Cleanup(func() {
		if mounted {
			exec.Command("umount", tb.State).Run()
		}
	})
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Fatalf("the first PADI: %s", got)
	}
	id := harness.XdpProgID(t, tb.Box, tb.BoxIface)
	if out, err := exec.Command("umount", tb.State).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	mounted = false
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "the pins are gone") })
	_, stderr, err := tb.Cacctl(t, "apply", "--config", harness.WriteConfig(t, lifeConfig(tb, 5, "")))
	if err == nil || !strings.Contains(stderr, "pins") {
		t.Errorf("apply with the pins gone: %v: %s", err, stderr)
	}
	if got := harness.XdpProgID(t, tb.Box, tb.BoxIface); got != id {
		t.Fatalf("with its pins gone the XDP program is %d, was %d: the filter came off", got, id)
	}
	if err := d.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the daemon went away with its pins: %v", err)
	}

	mount()
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "pinned again") })
	if padi := tb.Stats(t).Classes["pppoe-padi"]; padi.Seen != 1 || padi.Admitted != 1 {
		t.Errorf("counters pinned again: %+v, want the one PADI from before", padi)
	}
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("a PADI after the pins came back: %s, want class (the burst of 1 stays spent)", got)
	}
	d.Kill()
	d.Wait()
	d = tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	if got := harness.XdpProgID(t, tb.Box, tb.BoxIface); got != id || !strings.Contains(d.Log.String(), "took over") {
		t.Errorf("a restarted daemon runs program %d (was %d); its log:\n%s", got, id, d.Log.String())
	}
	if padi := tb.Stats(t).Classes["pppoe-padi"]; padi.Seen != 2 {
		t.Errorf("counters after the restart: %+v, want the two PADIs", padi)
	}
}
