package libxdp

import (
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestFilterJoinsXdpcac: xdpcac first, in mode multi, in a dispatcher of
// its own build; xdp-filter loaded after it joins that dispatcher, as
// libxdp reads it, and both filter.
func TestFilterJoinsXdpcac(t *testing.T) {
	b := newBox(t, ", mode: multi")
	ns, iface, cfg, send := b.ns, b.iface, b.cfg, func(f [][]byte) { b.send(t, f) }
	mac := testenv.HardwareAddr(t, ns, iface)

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
