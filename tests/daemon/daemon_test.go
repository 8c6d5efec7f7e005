package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// busyCgroup is a cgroup with no process yet, removed when the test ends,
// and the cpu.source that measures it.
type busyCgroup struct {
	dir   string
	procs []*testenv.Process
}

func newBusyCgroup(t *testing.T) (*busyCgroup, string) {
	t.Helper()
	root := cpu.Cgroup2Root()
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		t.Fatalf("no cgroup2 mount at %s: %v", root, err)
	}
	name := testenv.Unique("xdpcac-t-")
	cg := &busyCgroup{dir: filepath.Join(root, name)}
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cg.stop()
		// The kernel lets go of a cgroup a moment after its last process.
		if !testenv.Poll(time.Second, 20*time.Millisecond, func() bool {
			err := os.Remove(cg.dir)
			return err == nil || os.IsNotExist(err)
		}) {
			t.Errorf("cgroup %s left behind", cg.dir)
		}
	})
	return cg, "cgroup:" + name
}

// start runs busy loops in the cgroup: enough for half the machine.
func (cg *busyCgroup) start(t *testing.T) {
	t.Helper()
	for i := 0; i < max(1, runtime.NumCPU()/2); i++ {
		c := testenv.Start(t, exec.Command("sh", "-c", "while :; do :; done"), 0)
		cg.procs = append(cg.procs, c)
		if err := os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(strconv.Itoa(c.Pid())), 0o644); err != nil {
			t.Fatalf("move busy loop into %s: %v", cg.dir, err)
		}
	}
}

func (cg *busyCgroup) stop() {
	for _, c := range cg.procs {
		c.Stop()
	}
	cg.procs = nil
}

const daemonInterval = 300 * time.Millisecond

// daemonCPULimit is the new model's cpu-limit of the daemon tests. The
// busy loop takes half the machine when nothing else runs; a low limit
// keeps it over the gate when other work competes with it on a two-core
// host, and an idle cgroup far below.
const daemonCPULimit = 10

func daemonConfig(tb *harness.Testbed, source, extra string) string {
	return harness.E2eConfig + fmt.Sprintf(`interfaces: [{name: %s}]
cpu: {source: "%s", sample-interval: %v}
%s`, tb.BoxIface, source, daemonInterval, extra) + harness.Ios("new-model", "limit 100000", "cpu-limit "+harness.Itoa(daemonCPULimit), "pppoe 1 1")
}

// TestDaemonCPULimit: the daemon on a veth measures a cgroup; a busy
// process in it pushes the CPU over the new model's cpu-limit, PADIs are
// rejected as cpu-limit within two sample intervals, and admitted again
// within two intervals after the load stops.
func TestDaemonCPULimit(t *testing.T) {
	tb := harness.NewTestbed(t)
	cg, source := newBusyCgroup(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, daemonConfig(tb, source, "")))
	beats := tb.WatchHeartbeats(t)
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Fatalf("idle cgroup: PADI %s", got)
	}
	// Counted in the daemon's own samples rather than in wall time, which
	// a busy two-core host stretches: the first sample after the load
	// starts may cover it only in part, the second covers it whole. Late
	// is a PADI admitted though sent after the third sample was stamped,
	// which the daemon does only once it has written the second; the first
	// PADI refused may come a sample later than that, as a probe's own
	// cacctl runs take longer than the time between samples on a busy host.
	started := control.MonotonicCoarse()
	cg.start(t)
	took, before, sent := tb.UntilBetween(t, "cpu-limit", 10*time.Second)
	late, samples := beats.Between(started, before), beats.Between(started, sent)
	t.Logf("rejected as cpu-limit %v and %d samples after the load started (%d before the last PADI admitted)", took, samples, late)
	if late > 2 {
		t.Errorf("a PADI admitted %d samples after the load started, want refused within two", late)
	}
	if v := tb.CallAdmission(t); v.CPUPercent < daemonCPULimit || v.Reasons["cpu-limit"] == 0 {
		t.Errorf("show call admission statistics under load: CPU %v%%, %d rejected as cpu-limit", v.CPUPercent, v.Reasons["cpu-limit"])
	}
	stopped := control.MonotonicCoarse()
	cg.stop()
	took, before, sent = tb.UntilBetween(t, "admitted", 10*time.Second)
	late, samples = beats.Between(stopped, before), beats.Between(stopped, sent)
	t.Logf("admitted again %v and %d samples after the load stopped (%d before the last PADI refused)", took, samples, late)
	if late > 2 {
		t.Errorf("a PADI refused %d samples after the load stopped, want admitted within two", late)
	}
	// Admitting again, the IOS statistics still say what refused: the
	// sample over the limit, not the current one under it.
	if v := tb.CallAdmission(t); v.LastCPURefusal == nil || v.LastCPURefusal.CPUPercent < daemonCPULimit ||
		v.LastCPURefusal.Refused == 0 || !v.LastCPURefusal.Until.After(v.LastCPURefusal.From) {
		t.Errorf("show call admission statistics after the load: current CPU %v%%, last refusal %+v; want a sample over %d%% that refused",
			v.CPUPercent, v.LastCPURefusal, daemonCPULimit)
	}
	if out, _, err := tb.Cacctl(t, "show", "call", "admission", "statistics"); err != nil || !strings.Contains(out, "Last CPU that refused: ") {
		t.Errorf("show call admission statistics: %v\n%s", err, out)
	}
	if log := d.Log.String(); !strings.Contains(log, "control loop running") || !strings.Contains(log, source) {
		t.Errorf("the daemon's log does not say what it measures:\n%s", log)
	}
}

// TestDaemonStale: a daemon killed with SIGKILL while the CPU is over the
// limit. Once its heartbeat is older than stale-after, on-stale static
// keeps rejecting as cpu-limit, open admits, closed rejects as stale.
func TestDaemonStale(t *testing.T) {
	for rule, want := range map[string]string{"static": "cpu-limit", "open": "admitted", "closed": "stale"} {
		t.Run(rule, func(t *testing.T) {
			tb := harness.NewTestbed(t)
			cg, source := newBusyCgroup(t)
			cg.start(t)
			d := tb.StartDaemon(t, harness.WriteConfig(t, daemonConfig(tb, source, "stale-after: 1s\non-stale: "+rule+"\n")))
			tb.Until(t, "cpu-limit", 10*time.Second)
			if err := d.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			d.Wait()
			// Still fresh: the last values hold whatever the rule. Fresh
			// as the fast path judges it, by its clock and the same rule
			// as show call admission statistics: fresh when read after
			// the PADI, so fresh when the PADI was judged.
			got := tb.PadiOutcome(t)
			if v := tb.CallAdmission(t); v.Stale {
				t.Logf("just after the kill: stale already when read, PADI %s", got)
			} else if got != "cpu-limit" {
				t.Errorf("just after the kill: PADI %s, want cpu-limit", got)
			}
			if !testenv.Poll(time.Minute, 20*time.Millisecond, func() bool { return tb.CallAdmission(t).Stale }) {
				t.Fatal("the heartbeat never went stale after the kill")
			}
			if got := tb.PadiOutcome(t); got != want {
				t.Errorf("stale, on-stale %s: PADI %s, want %s", rule, got, want)
			}
		})
	}
}

// TestDaemonBuffers: the daemon watches the receive buffer of a SIP
// server's socket in the box; when it fills, calls are rejected as
// buffers, and admitted again once the server has read it empty.
func TestDaemonBuffers(t *testing.T) {
	tb := harness.NewTestbed(t)
	if out, err := exec.Command("ip", "-n", tb.Box, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	var server, client int
	err := testenv.Do(tb.Box, func() error {
		var err error
		if server, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(server, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096); err != nil {
			return err
		}
		if err := unix.Bind(server, &unix.SockaddrInet4{Port: 5060, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return err
		}
		client, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(server); unix.Close(client) })

	// An idle cgroup keeps the CPU gate open whatever else the host runs.
	_, source := newBusyCgroup(t)
	tb.StartDaemon(t, harness.WriteConfig(t, daemonConfig(tb, source, "buffers: {udp-ports: [5060]}\n")))
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Fatalf("empty buffers: PADI %s", got)
	}
	to := &unix.SockaddrInet4{Port: 5060, Addr: [4]byte{127, 0, 0, 1}}
	for i := 0; i < 200; i++ { // well past 4 KiB: the queue fills, then drops
		unix.Sendto(client, make([]byte, 64), unix.MSG_DONTWAIT, to)
	}
	took, _ := tb.Until(t, "buffers", 10*time.Second)
	t.Logf("rejected as buffers %v after the queue filled", took)
	if v := tb.CallAdmission(t); !v.BuffersFull {
		t.Errorf("show call admission statistics says the buffers are not full")
	}
	buf := make([]byte, 2048)
	for {
		if _, _, err := unix.Recvfrom(server, buf, unix.MSG_DONTWAIT); err != nil {
			break
		}
	}
	took, _ = tb.Until(t, "admitted", 10*time.Second)
	t.Logf("admitted again %v after the server read the queue empty", took)
}

// TestDaemonSamplerFails: the cgroup the daemon measures goes away under
// it. It writes no heartbeat without a measurement, so after stale-after
// the fast path applies on-stale: closed rejects calls as stale.
func TestDaemonSamplerFails(t *testing.T) {
	tb := harness.NewTestbed(t)
	cg, source := newBusyCgroup(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, daemonConfig(tb, source, "stale-after: 1s\non-stale: closed\n")))
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Fatalf("measuring: PADI %s", got)
	}
	if err := os.Remove(cg.dir); err != nil {
		t.Fatal(err)
	}
	took, _ := tb.Until(t, "stale", 5*time.Second)
	t.Logf("stale %v after the cgroup went", took)
	if !strings.Contains(d.Log.String(), "control loop step failed") {
		t.Errorf("the daemon did not log why it stopped measuring:\n%s", d.Log.String())
	}
}
