package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// demoLeftovers lists what of the demo with this id is still there: its
// namespaces, its veth ends, its state directory and its daemon's files.
func demoLeftovers(t *testing.T, id string) []string {
	t.Helper()
	var left []string
	ns, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "-o", "link").Output()
	for _, l := range strings.Split(string(ns)+string(links), "\n") {
		if strings.Contains(l, "xcdemo-bras-"+id) || strings.Contains(l, "xcdemo-peer-"+id) || strings.Contains(l, "xcd"+id) {
			left = append(left, l)
		}
	}
	state := "/sys/fs/bpf/xdpcac-demo-" + id
	p := api.PathsOf(state)
	for _, f := range []string{state, p.Dir} {
		if _, err := os.Stat(f); err == nil {
			left = append(left, f)
		}
	}
	return left
}

var demoID = regexp.MustCompile(`namespace xcdemo-bras-([0-9a-f]+)`)

// TestDemo: cacctl demo runs its storms, prints the statistics and a
// summary, exits 0, and leaves nothing behind.
func TestDemo(t *testing.T) {
	testenv.RequireBPF(t)
	temps, _ := filepath.Glob(filepath.Join(os.TempDir(), "xdpcac-demo-*"))
	out, stderr, err := harness.Cacctl(t, "demo", "--duration", "4s")
	if err != nil {
		t.Fatalf("demo: %v: %s\n%s", err, stderr, out)
	}
	m := demoID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("demo does not name its testbed:\n%s", out)
	}
	for _, want := range []string{"== padi-storm", "== icrq-burst", "== sip-scanner", "Cac New Model (SRSM) is ACTIVE",
		"daemon: cacctl run in this process", "metrics: http://127.0.0.1:", "== result",
		"trusted peer 192.0.2.2 (account pbx):", "== egress", "were answered 503 on its behalf by the filter",
		"== capacity", "3 answered, 3 refused for capacity; once they hung up, the next call was answered",
		"result: every storm was held back"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if left := demoLeftovers(t, m[1]); len(left) > 0 {
		t.Errorf("demo left behind: %v", left)
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "xdpcac-demo-*")); len(after) > len(temps) {
		t.Errorf("demo left temporary files: %v (before: %v)", after, temps)
	}
}

// stormOn is the demo's line of PADI counts, drawn once the storm is on.
var stormOn = regexp.MustCompile(`(?m)^   pppoe-padi`)

// TestDemoInterrupted: Ctrl-C in the middle of the demo removes the
// testbed as well.
func TestDemoInterrupted(t *testing.T) {
	testenv.RequireBPF(t)
	demo := testenv.Start(t, exec.Command(harness.CacctlBin, "demo", "--duration", "60s"), 0)
	id := ""
	// Until the storm is on, or the demo has ended.
	testenv.Poll(time.Minute, 50*time.Millisecond, func() bool {
		out := demo.Log.String()
		if m := demoID.FindStringSubmatch(out); m != nil {
			id = m[1]
		}
		select {
		case <-demo.Done():
			return true
		default:
		}
		return stormOn.MatchString(out)
	})
	if id == "" {
		t.Fatal("the demo never named its testbed")
	}
	if err := demo.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-demo.Done():
		if err := demo.Wait(); err != nil {
			t.Errorf("demo after Ctrl-C: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the demo did not end within 10 s of Ctrl-C")
	}
	if left := demoLeftovers(t, id); len(left) > 0 {
		t.Errorf("Ctrl-C left behind: %v", left)
	}
}

// TestTopOnce: cacctl top --once draws a frame from the pinned maps: the
// classes, the buckets and the sources rejected last.
func TestTopOnce(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {cps: 0.001, burst: 2}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	var frames [][]byte
	for i := 0; i < 5; i++ {
		frames = append(frames, harness.Padi)
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 5 })
	out, stderr, err := tb.Cacctl(t, "top", "--once")
	if err != nil {
		t.Fatalf("top --once: %v: %s", err, stderr)
	}
	// The class's counts since attach, its bucket empty of its burst of
	// two, and the source it rejected.
	for _, want := range []string{`pppoe-padi\s+0\s+0\s+0\s+2\s+3\b`, `pppoe-padi\s+0\s+2\s+\.`, `02:00:5e:00:53:01\s+pppoe-padi\s+class\s`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("top --once lacks %q:\n%s", want, out)
		}
	}
}
