package libxdp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestDaemonInDispatcher: cacctl run takes over an attachment in
// xdp-filter's dispatcher with its state, and puts xdpcac back in a
// dispatcher when the interface is removed and made again.
func TestDaemonInDispatcher(t *testing.T) {
	b := newBox(t, ", priority: 30")
	ns, iface, cfg, send := b.ns, b.iface, b.cfg, func(f [][]byte) { b.send(t, f) }

	loadFilter(t, b, cfg)
	b.cacctl(t, "attach", iface, "--config", cfg)
	checkStatus(t, b, "multi", 30)
	send(padiStorm(storm))
	before := padiRejected(t, b)
	if before < storm-2 {
		t.Fatalf("a storm of %d PADIs: %d rejected", storm, before)
	}

	log := startDaemon(t, b, cfg)
	waitFor(t, log, "took over", func() bool { return strings.Contains(log.String(), "took over the attachment") })
	if got := padiRejected(t, b); got < before {
		t.Errorf("after the take-over %d PADIs rejected, %d before: the counters were not kept", got, before)
	}
	loaderLists(t, b, "xdpfilt_", "xdp_cac")
	checkStatus(t, b, "multi", 30)

	// The interface removed and made again: xdp-filter went with it, and
	// the daemon puts xdpcac back, in a dispatcher of its own.
	if out, err := exec.Command("ip", "-n", ns, "link", "del", iface).CombinedOutput(); err != nil {
		t.Fatalf("ip link del: %v: %s", err, out)
	}
	testenv.VethNamed(t, ns, b.peer, iface, b.peerIface)
	waitFor(t, log, "attached again", func() bool {
		st, err := b.tool("xdp-loader", "status", iface)
		return err == nil && strings.Contains(st, "xdp_cac")
	})
	checkStatusOf(t, b, "multi", 30, true)
	send(padiStorm(storm))
	if got := padiRejected(t, b); got < before+storm-2 {
		t.Errorf("after the interface came back %d PADIs rejected in all, want at least %d", got, before+storm-2)
	}
	if dirs, _ := filepath.Glob(filepath.Join(b.libxdp, "xdp", "dispatch-*")); len(dirs) != 1 {
		t.Errorf("libxdp's pins: %v, want the one dispatcher of the interface", dirs)
	}
}

// startDaemon starts cacctl run for the box and returns its log; it is
// killed when t ends, leaving the filter for the box's cleanup to detach.
func startDaemon(t *testing.T, b *box, cfg string) *testenv.SyncBuffer {
	t.Helper()
	log := &testenv.SyncBuffer{}
	cmd := exec.Command(cacctlBin, "--state-dir", b.stateDir, "--netns", b.ns, "run", "--config", cfg,
		"--rejects-log", filepath.Join(t.TempDir(), "rejects.jsonl"))
	cmd.Env, cmd.Stderr = b.env, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		// What a killed daemon leaves in /run/xdpcac: its directory,
		// with its socket, lock and statuses.
		os.RemoveAll(api.PathsOf(b.stateDir).Dir)
		if t.Failed() {
			t.Logf("daemon log:\n%s", log.String())
		}
	})
	return log
}

// waitFor waits for cond, for as long as an emulated CPU takes to load the
// program (the kernel-floor VM), and fails t with the daemon's log.
func waitFor(t *testing.T, log *testenv.SyncBuffer, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 3 minutes; daemon log:\n%s", what, log.String())
		}
	}
}
