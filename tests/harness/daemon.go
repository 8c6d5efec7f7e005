package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// Daemon is `cacctl run` on the testbed's box interface.
type Daemon struct {
	*testenv.Process // its log: what it writes on stdout and stderr
	RejectsLog       string
}

// StartDaemon runs cacctl run with cfg and waits until its first
// measurement is in force; the filter is detached when the test ends. It
// runs with the capabilities of deploy/'s unit alone (DaemonCaps), so that
// every daemon test shows they are enough.
func (tb *Testbed) StartDaemon(t *testing.T, cfg string, flags ...string) *Daemon {
	t.Helper()
	// A deadline, not a wait: the verifier takes a second or two, but on
	// a busy two-CPU host (a test's CPU hog beside a VM) more than 5 s.
	return tb.StartDaemonWithin(t, 30*time.Second, cfg, flags...)
}

// StartDaemonWithin is StartDaemon that waits up to wait for the daemon:
// longer than the host's where the CPU is emulated (the kernel VM of
// tests/kernels under TCG, whose verifier takes half a minute).
func (tb *Testbed) StartDaemonWithin(t *testing.T, wait time.Duration, cfg string, flags ...string) *Daemon {
	t.Helper()
	d := &Daemon{RejectsLog: filepath.Join(t.TempDir(), "rejects.jsonl")}
	args := append([]string{"--netns", tb.Box, "--state-dir", tb.State, "run", "--config", cfg,
		"--rejects-log", d.RejectsLog}, flags...)
	argv := append(append(DaemonCaps[:len(DaemonCaps):len(DaemonCaps)], CacctlBin), args...)
	// Killed at the end, with no grace: what a daemon leaves when it dies
	// is for the next to take over, and the detach here to undo.
	d.Process = testenv.Start(t, exec.Command(argv[0], argv[1:]...), 0)
	t.Cleanup(func() {
		d.Stop()
		tb.Cacctl(t, "detach", tb.BoxIface)
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.Log.String())
		}
	})
	// Up when its API answers with its pid and its loop has written: a
	// heartbeat of an earlier daemon proves nothing.
	started := time.Now()
	if !testenv.Poll(wait, 20*time.Millisecond, func() bool {
		out, _, err := tb.Cacctl(t, "status", "-o", "json")
		var st struct{ Daemon *struct{ PID int } }
		if StatusErr(err) != nil || json.Unmarshal([]byte(out), &st) != nil || st.Daemon == nil || st.Daemon.PID != d.Pid() {
			return false
		}
		age := tb.CallAdmission(t).HeartbeatAgeMS
		return age != nil && time.Duration(*age)*time.Millisecond < time.Since(started)
	}) {
		t.Fatalf("the daemon was not up within %v", wait)
	}
	return d
}

// CallAdmission is show call admission statistics -o json.
func (tb *Testbed) CallAdmission(t *testing.T) maps.CallAdmissionView {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "show", "call", "admission", "statistics", "-o", "json")
	if err != nil {
		t.Fatalf("show call admission statistics: %v: %s", err, stderr)
	}
	var v maps.CallAdmissionView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show call admission statistics -o json: %v\n%s", err, out)
	}
	return v
}

// PadiOutcome sends one PADI and says how the filter counted it: "admitted"
// or the reject reason.
func (tb *Testbed) PadiOutcome(t *testing.T) string {
	t.Helper()
	outcome, _ := tb.PadiProbe(t)
	return outcome
}

// PadiProbe is PadiOutcome that also returns the fast path's clock right
// after the PADI went through it.
func (tb *Testbed) PadiProbe(t *testing.T) (string, uint64) {
	t.Helper()
	outcome, _, sent := tb.padiProbe(t)
	return outcome, sent
}

// padiProbe is PadiProbe that also returns the fast path's clock right
// before the PADI was sent: its verdict came between the two.
func (tb *Testbed) padiProbe(t *testing.T) (outcome string, start, sent uint64) {
	t.Helper()
	before := tb.Stats(t).Classes["pppoe-padi"]
	start = control.MonotonicCoarse()
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{Padi})
	sent = control.MonotonicCoarse()
	testenv.WaitFor(t, func() bool {
		after := tb.Stats(t).Classes["pppoe-padi"]
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
	return outcome, start, sent
}

// Until sends PADIs until one comes out as want, and returns how long it
// took and the fast path's clock just after that PADI went through; it
// fails after limit.
func (tb *Testbed) Until(t *testing.T, want string, limit time.Duration) (time.Duration, uint64) {
	t.Helper()
	took, _, sent := tb.UntilBetween(t, want, limit)
	return took, sent
}

// UntilBetween is Until that also returns the fast path's clock before
// the last PADI that did not come out as want was sent (0 if the first
// did): the change a test waits for was not in force then.
func (tb *Testbed) UntilBetween(t *testing.T, want string, limit time.Duration) (took time.Duration, before, sent uint64) {
	t.Helper()
	start := time.Now()
	var got string
	var began uint64
	if !testenv.Poll(limit, 20*time.Millisecond, func() bool {
		before = began
		got, began, sent = tb.padiProbe(t)
		return got == want
	}) {
		t.Fatalf("no PADI %s within %v (the last was %s)", want, limit, got)
	}
	return time.Since(start), before, sent
}

// Heartbeats records every heartbeat the daemon writes, read from the
// pinned maps every 10 ms until the test ends.
type Heartbeats struct {
	Mu   sync.Mutex
	Seen []uint64
}

func (tb *Testbed) WatchHeartbeats(t *testing.T) *Heartbeats {
	p, err := loader.Open(tb.State, loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box})
	if err != nil {
		t.Fatal(err)
	}
	h := &Heartbeats{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if in, err := maps.ReadInputs(maps.InputMapsOf(&p.XdpMaps)); err == nil {
				h.Mu.Lock()
				if n := len(h.Seen); n == 0 || h.Seen[n-1] != in.HeartbeatNS {
					h.Seen = append(h.Seen, in.HeartbeatNS)
				}
				h.Mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; p.Close() })
	return h
}

// Between counts the heartbeats written after from and up to to: the
// daemon's samples in that span.
func (h *Heartbeats) Between(from, to uint64) int {
	h.Mu.Lock()
	defer h.Mu.Unlock()
	n := 0
	for _, b := range h.Seen {
		if b > from && b <= to {
			n++
		}
	}
	return n
}

// CacctlBin is the cacctl binary built for this run, by RunTests.
var CacctlBin string

// RunTests builds cacctl (or takes XDPCAC_CACCTL) and runs the tests of
// a package that calls it from its TestMain.
func RunTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "xdpcac-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	CacctlBin = filepath.Join(dir, "cacctl")
	// XDPCAC_CACCTL names a cacctl built beforehand, for a machine without
	// Go such as the kernel-floor VM of tests/kernels.
	if bin := os.Getenv("XDPCAC_CACCTL"); bin != "" {
		CacctlBin = bin
	} else if out, err := exec.Command("go", "build", "-o", CacctlBin, "github.com/xdpcac/xdpcac/cmd/cacctl").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build cacctl: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// Cacctl runs the binary and returns its standard output and error.
func Cacctl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(CacctlBin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// Degraded reports whether err is cacctl status's exit 3: it printed
// everything, and says the filter does not protect as configured.
func Degraded(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 3
}

// StatusErr is err unless it is only the exit 3 of a degraded status.
func StatusErr(err error) error {
	if Degraded(err) {
		return nil
	}
	return err
}

// StateDir is a fresh directory on bpffs for one test's attachments.
func StateDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("/sys/fs/bpf", testenv.Unique("xdpcac-t-"))
	t.Cleanup(func() {
		os.RemoveAll(dir)
		RemoveDaemonFiles(dir)
	})
	return dir
}

// RemoveDaemonFiles removes what a daemon of stateDir leaves in
// api.RunDir: its directory, with its lock file, its statuses (and the
// file a crash left while writing them), and the socket of one that was
// killed.
func RemoveDaemonFiles(stateDir string) {
	os.RemoveAll(api.PathsOf(stateDir).Dir)
}

func WriteConfig(t testing.TB, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cac.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func Itoa(n int) string { return strconv.Itoa(n) }

// WaitAttached waits up to three seconds for an XDP program on iface in
// ns.
func WaitAttached(t *testing.T, ns, iface, after string) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if id := XdpProgID(t, ns, iface); id != 0 {
			t.Logf("attached %v after %s: program %d", time.Since(start), after, id)
			return
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("no XDP program on %s three seconds after %s", iface, after)
		}
	}
}

// NewInterface makes a new veth of the box's interface name, to a new
// peer, and requires the daemon to attach it within three seconds with
// the state it had: a PADI class bucket of burst 1, spent before.
func (tb *Testbed) NewInterface(t *testing.T, after string) {
	t.Helper()
	newPeer := testenv.Unique("xcp")
	testenv.VethNamed(t, tb.Box, tb.Peer, tb.BoxIface, newPeer)
	WaitAttached(t, tb.Box, tb.BoxIface, after)
	tb.PeerIfc = newPeer
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("a PADI after %s: %s, want class (the burst of 1 stays spent)", after, got)
	}
}

// InForce reads the policy the testbed's fast path holds.
func (tb *Testbed) InForce(t *testing.T) maps.InForce {
	t.Helper()
	p, err := loader.OpenShared(tb.State)
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

// PostApply asks the testbed's daemon, on its API socket, to apply cfg,
// and says whether the daemon answered that it had: it may die before it
// answers, which is no failure of PostApply's.
func (tb *Testbed) PostApply(cfg string) (applied bool) {
	c := api.Dial(tb.State)
	return c != nil && c.Apply(cfg, false) == nil
}

// DaemonCaps are the capabilities `cacctl run` is tested with: deploy/'s
// unit grants these and CAP_PERFMON, for which CAP_SYS_ADMIN stands in.
// CAP_NET_RAW sends the 503s of action: reject, CAP_CHOWN gives the socket
// to api.read-group.
var DaemonCaps = []string{"setpriv",
	"--bounding-set=-all,+net_admin,+sys_admin,+bpf,+net_raw,+chown", "--inh-caps=-all,+net_admin,+sys_admin,+bpf,+net_raw,+chown",
	"--ambient-caps=-all,+net_admin,+sys_admin,+bpf,+net_raw,+chown", "--"}

// StatsByReason is show stats' rejects by class and reason, as sumByReason
// keys them.
func (tb *Testbed) StatsByReason(t *testing.T) map[string]uint64 {
	out := map[string]uint64{}
	for class, c := range tb.Stats(t).Classes {
		for reason, n := range c.Reasons {
			if n > 0 {
				out[class+" "+reason] = n
			}
		}
	}
	return out
}
