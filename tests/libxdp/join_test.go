package libxdp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestFilterJoinsXdpcac: xdpcac first, in mode multi, in a dispatcher of
// its own build; xdp-filter loaded after it joins that dispatcher, as
// libxdp reads it, and both filter.
func TestFilterJoinsXdpcac(t *testing.T) {
	testenv.RequireBPF(t)
	needTools(t)
	ns, peer := testenv.Netns(t), testenv.Netns(t)
	iface, peerIface := testenv.Veth(t, ns, peer)
	testenv.Addr(t, ns, iface, "192.0.2.2/24")
	b := newBox(t, ns, iface)
	cfg := filepath.Join(t.TempDir(), "cac.yaml")
	if err := os.WriteFile(cfg, []byte(config+"interfaces: [{name: "+iface+", mode: multi}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mac := testenv.HardwareAddr(t, ns, iface)
	send := func(frames [][]byte) { testenv.Send(t, peer, peerIface, frames) }

	if _, stderr, err := b.cacctlRun("attach", iface, "--config", cfg); err != nil {
		if strings.Contains(stderr, "refuses extension") {
			t.Skipf("this kernel refuses extension programs: %s", stderr)
		}
		t.Fatalf("attach in mode multi: %v: %s", err, stderr)
	}
	loaderLists(t, b, "xdp_dispatcher", "xdp_cac")
	checkStatus(t, b, "multi", 40)

	b.mustTool(t, "xdp-filter", "load", iface)
	b.mustTool(t, "xdp-filter", "port", "9999")
	loaderLists(t, b, "xdpfilt_", "xdp_cac")
	checkStatus(t, b, "multi", 40)
	if got := udpReceived(t, ns, deniedPort, func() { send(udpFrames(mac, deniedPort, 10)) }); got != 0 {
		t.Errorf("xdp-filter in xdpcac's dispatcher: %d datagrams to its denied port arrived, want 0", got)
	}
	before := padiRejected(t, b)
	send(padiStorm(storm))
	if got := padiRejected(t, b) - before; got < storm-2 {
		t.Errorf("xdpcac with xdp-filter joined rejected %d of a storm of %d PADIs", got, storm)
	}

	b.cacctl(t, "detach", iface)
	loaderLists(t, b, "xdpfilt_")
	if got := udpReceived(t, ns, deniedPort, func() { send(udpFrames(mac, deniedPort, 10)) }); got != 0 {
		t.Errorf("xdp-filter after cacctl detach: %d datagrams to its denied port arrived, want 0", got)
	}
}
