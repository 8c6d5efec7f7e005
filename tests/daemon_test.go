package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// lockedBuffer collects a daemon's log while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// daemon is `cacctl run` on the testbed's box interface.
type daemon struct {
	cmd *exec.Cmd
	log *lockedBuffer
}

// startDaemon runs cacctl run with cfg and waits until its first
// measurement is in force; the filter is detached when the test ends.
func (tb *testbed) startDaemon(t *testing.T, cfg string) *daemon {
	t.Helper()
	d := &daemon{log: &lockedBuffer{}}
	d.cmd = exec.Command(cacctlBin, "--netns", tb.box, "--state-dir", tb.state, "run", "--config", cfg)
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		d.cmd.Wait()
		tb.cacctl(t, "detach", tb.boxIface)
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log.String())
		}
	})
	waitFor(t, func() bool { return tb.callAdmission(t).HeartbeatAgeMS != nil })
	return d
}

// callAdmission is show call admission statistics -o json.
func (tb *testbed) callAdmission(t *testing.T) maps.CallAdmissionView {
	t.Helper()
	out, stderr, err := tb.cacctl(t, "show", "call", "admission", "statistics", "-o", "json")
	if err != nil {
		t.Fatalf("show call admission statistics: %v: %s", err, stderr)
	}
	var v maps.CallAdmissionView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show call admission statistics -o json: %v\n%s", err, out)
	}
	return v
}

// busyCgroup is a cgroup with no process yet, removed when the test ends,
// and the cpu.source that measures it.
type busyCgroup struct {
	dir   string
	procs []*exec.Cmd
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
		os.Remove(cg.dir)
	})
	return cg, "cgroup:" + name
}

// start runs busy loops in the cgroup: enough for half the machine.
func (cg *busyCgroup) start(t *testing.T) {
	t.Helper()
	for i := 0; i < max(1, runtime.NumCPU()/2); i++ {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cg.procs = append(cg.procs, c)
		if err := os.WriteFile(filepath.Join(cg.dir, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move busy loop into %s: %v", cg.dir, err)
		}
	}
}

func (cg *busyCgroup) stop() {
	for _, c := range cg.procs {
		c.Process.Kill()
		c.Wait()
	}
	cg.procs = nil
}

// padiOutcome sends one PADI and says how the filter counted it: "admitted"
// or the reject reason.
func (tb *testbed) padiOutcome(t *testing.T) string {
	t.Helper()
	before := tb.stats(t).Classes["pppoe-padi"]
	testenv.Send(t, tb.peer, tb.peerIfc, [][]byte{padi})
	var outcome string
	waitFor(t, func() bool {
		after := tb.stats(t).Classes["pppoe-padi"]
		if after.Seen == before.Seen {
			return false
		}
		outcome = "admitted"
		for r, n := range after.Reasons {
			if n > before.Reasons[r] {
				outcome = r
			}
		}
		return true
	})
	return outcome
}

// until sends PADIs until one comes out as want, and returns how long it
// took; it fails after limit.
func (tb *testbed) until(t *testing.T, want string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := tb.padiOutcome(t)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("no PADI %s within %v (the last was %s)", want, limit, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const daemonInterval = 300 * time.Millisecond

func daemonConfig(tb *testbed, source, extra string) string {
	return e2eConfig + fmt.Sprintf(`interfaces: [{name: %s}]
cpu: {source: "%s", sample-interval: %v}
%s`, tb.boxIface, source, daemonInterval, extra) + ios("new-model", "limit 100000", "cpu-limit 25", "pppoe 1 1")
}

// TestDaemonCPULimit: the daemon on a veth measures a cgroup; a busy
// process in it pushes the CPU over the new model's cpu-limit, PADIs are
// rejected as cpu-limit within two sample intervals, and admitted again
// within two intervals after the load stops.
func TestDaemonCPULimit(t *testing.T) {
	tb := newTestbed(t)
	cg, source := newBusyCgroup(t)
	d := tb.startDaemon(t, writeConfig(t, daemonConfig(tb, source, "")))
	if got := tb.padiOutcome(t); got != "admitted" {
		t.Fatalf("idle cgroup: PADI %s", got)
	}
	// Two intervals, and what the probing takes: each probe sends a PADI
	// and runs cacctl show stats until it is counted.
	const probe = 150 * time.Millisecond
	limit := 2*daemonInterval + probe
	cg.start(t)
	took := tb.until(t, "cpu-limit", 5*time.Second)
	t.Logf("rejected as cpu-limit %v after the load started", took)
	if took > limit {
		t.Errorf("rejected %v after the load started, want within %v", took, limit)
	}
	if v := tb.callAdmission(t); v.CPUPercent < 25 || v.Reasons["cpu-limit"] == 0 {
		t.Errorf("show call admission statistics under load: CPU %v%%, %d rejected as cpu-limit", v.CPUPercent, v.Reasons["cpu-limit"])
	}
	cg.stop()
	took = tb.until(t, "admitted", 5*time.Second)
	t.Logf("admitted again %v after the load stopped", took)
	if took > limit {
		t.Errorf("admitted again %v after the load stopped, want within %v", took, limit)
	}
	if log := d.log.String(); !strings.Contains(log, "control loop running") || !strings.Contains(log, source) {
		t.Errorf("the daemon's log does not say what it measures:\n%s", log)
	}
}

// TestDaemonStale: a daemon killed with SIGKILL while the CPU is over the
// limit. Once its heartbeat is older than stale-after, on-stale static
// keeps rejecting as cpu-limit, open admits, closed rejects as stale.
func TestDaemonStale(t *testing.T) {
	for rule, want := range map[string]string{"static": "cpu-limit", "open": "admitted", "closed": "stale"} {
		t.Run(rule, func(t *testing.T) {
			tb := newTestbed(t)
			cg, source := newBusyCgroup(t)
			cg.start(t)
			d := tb.startDaemon(t, writeConfig(t, daemonConfig(tb, source, "stale-after: 1s\non-stale: "+rule+"\n")))
			tb.until(t, "cpu-limit", 5*time.Second)
			if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			d.cmd.Wait()
			killed := time.Now()
			// Still fresh: the last values hold whatever the rule.
			if got := tb.padiOutcome(t); got != "cpu-limit" && time.Since(killed) < 700*time.Millisecond {
				t.Errorf("just after the kill: PADI %s, want cpu-limit", got)
			}
			time.Sleep(time.Until(killed.Add(1500 * time.Millisecond)))
			if got := tb.padiOutcome(t); got != want {
				t.Errorf("stale, on-stale %s: PADI %s, want %s", rule, got, want)
			}
		})
	}
}

// TestDaemonBuffers: the daemon watches the receive buffer of a SIP
// server's socket in the box; when it fills, calls are rejected as
// buffers, and admitted again once the server has read it empty.
func TestDaemonBuffers(t *testing.T) {
	tb := newTestbed(t)
	if out, err := exec.Command("ip", "-n", tb.box, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	var server, client int
	err := testenv.Do(tb.box, func() error {
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
	tb.startDaemon(t, writeConfig(t, daemonConfig(tb, source, "buffers: {udp-ports: [5060]}\n")))
	if got := tb.padiOutcome(t); got != "admitted" {
		t.Fatalf("empty buffers: PADI %s", got)
	}
	to := &unix.SockaddrInet4{Port: 5060, Addr: [4]byte{127, 0, 0, 1}}
	for i := 0; i < 200; i++ { // well past 4 KiB: the queue fills, then drops
		unix.Sendto(client, make([]byte, 64), unix.MSG_DONTWAIT, to)
	}
	took := tb.until(t, "buffers", 5*time.Second)
	t.Logf("rejected as buffers %v after the queue filled", took)
	if v := tb.callAdmission(t); !v.BuffersFull {
		t.Errorf("show call admission statistics says the buffers are not full")
	}
	buf := make([]byte, 2048)
	for {
		if _, _, err := unix.Recvfrom(server, buf, unix.MSG_DONTWAIT); err != nil {
			break
		}
	}
	took = tb.until(t, "admitted", 5*time.Second)
	t.Logf("admitted again %v after the server read the queue empty", took)
}
