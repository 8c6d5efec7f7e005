package libxdp

import (
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The configuration: a PADI limit of a burst of 2 over the box, so that a
// storm of PADIs is xdpcac's to drop.
const config = `classes:
  pppoe-padi:
    cps: 1
    burst: 2
`

const (
	deniedPort = 9999 // xdp-filter drops it
	openPort   = 9998 // nobody does
	storm      = 20
)

// TestSharesWithXDPFilter puts xdp-filter and xdpcac on one interface:
// each drops its own frames, xdp-loader lists both, and each taken off
// alone leaves the other filtering.
func TestSharesWithXDPFilter(t *testing.T) {
	b := newBox(t, "")
	ns, iface, cfg, send := b.ns, b.iface, b.cfg, func(f [][]byte) { b.send(t, f) }
	mac := testenv.HardwareAddr(t, ns, iface)

	loadFilter(t, b, cfg)
	b.mustTool(t, "xdp-filter", "port", "9999")

	// --force in another mode never evicts the dispatcher.
	if _, stderr, err := b.cacctlRun("attach", iface, "--config", cfg, "--mode", "native", "--force"); err == nil || !strings.Contains(stderr, "--force does not evict") {
		t.Errorf("attach --mode native --force beside xdp-filter: want a refusal, got %v: %s", err, stderr)
	}
	loaderLists(t, b, "xdp_dispatcher", "xdpfilt_")

	// xdpcac joins xdp-filter's dispatcher, in auto mode.
	b.cacctl(t, "attach", iface, "--config", cfg)
	loaderLists(t, b, "xdpfilt_", "xdp_cac")
	checkStatus(t, b, "multi", 40)
	if got := udpReceived(t, ns, deniedPort, func() { send(udpFrames(mac, deniedPort, 10)) }); got != 0 {
		t.Errorf("xdp-filter beside xdpcac: %d datagrams to its denied port arrived, want 0", got)
	}
	if got := udpReceived(t, ns, openPort, func() { send(udpFrames(mac, openPort, 10)) }); got != 10 {
		t.Errorf("through both programs: %d of 10 datagrams to an open port arrived", got)
	}
	before := padiRejected(t, b)
	send(padiStorm(storm))
	if got := padiRejected(t, b) - before; got < storm-2 {
		t.Errorf("xdpcac beside xdp-filter rejected %d of a storm of %d PADIs, want at least %d", got, storm, storm-2)
	}

	// xdpcac taken off alone: xdp-filter goes on.
	b.cacctl(t, "detach", iface)
	loaderLists(t, b, "xdpfilt_")
	if st := b.mustTool(t, "xdp-loader", "status", iface); strings.Contains(st, "xdp_cac") {
		t.Errorf("after cacctl detach xdp-loader still lists xdp_cac:\n%s", st)
	}
	if got := udpReceived(t, ns, deniedPort, func() { send(udpFrames(mac, deniedPort, 10)) }); got != 0 {
		t.Errorf("xdp-filter after cacctl detach: %d datagrams to its denied port arrived, want 0", got)
	}

	// xdp-filter taken off alone: xdpcac goes on, with its counters.
	b.cacctl(t, "attach", iface, "--config", cfg)
	loaderLists(t, b, "xdpfilt_", "xdp_cac")
	b.mustTool(t, "xdp-filter", "unload", iface)
	loaderLists(t, b, "xdp_cac")
	checkStatus(t, b, "multi", 40)
	before = padiRejected(t, b)
	send(padiStorm(storm))
	if got := padiRejected(t, b) - before; got < storm-2 {
		t.Errorf("xdpcac after xdp-filter unload rejected %d of a storm of %d PADIs, want at least %d", got, storm, storm-2)
	}
	if got := udpReceived(t, ns, deniedPort, func() { send(udpFrames(mac, deniedPort, 10)) }); got != 10 {
		t.Errorf("after xdp-filter unload: %d of 10 datagrams to its port arrived", got)
	}

	// The last program off: nothing is left on the interface or pinned.
	b.cacctl(t, "detach", iface)
	if st := b.mustTool(t, "xdp-loader", "status", iface); strings.Contains(st, "xdp_cac") || strings.Contains(st, "xdp_dispatcher") {
		t.Errorf("after the last detach:\n%s", st)
	}
	if left, _ := filepath.Glob(filepath.Join(b.libxdp, "xdp", "dispatch-*")); len(left) > 0 {
		t.Errorf("libxdp pins left after the last detach: %v", left)
	}
}

// loadFilter loads xdp-filter on the box's interface, and skips t when
// libxdp put it there without a dispatcher: it falls back to a single
// program when the kernel refuses extension programs, and there is then
// nothing to share; cacctl must refuse the interface as it refuses any
// other program.
func loadFilter(t *testing.T, b *box, cfg string) {
	t.Helper()
	b.mustTool(t, "xdp-filter", "load", b.iface)
	if st := b.mustTool(t, "xdp-loader", "status", b.iface); !strings.Contains(st, "xdp_dispatcher") {
		_, stderr, err := b.cacctlRun("attach", b.iface, "--config", cfg)
		if err == nil || !strings.Contains(stderr, "already has an XDP program") {
			t.Fatalf("attach beside xdp-filter without a dispatcher: want a refusal, got %v: %s", err, stderr)
		}
		t.Skipf("libxdp loaded xdp-filter without a dispatcher (this kernel refuses extension programs):\n%s", st)
	}
}

// loaderLists fails t unless xdp-loader status lists every name given.
func loaderLists(t *testing.T, b *box, names ...string) {
	t.Helper()
	st := b.mustTool(t, "xdp-loader", "status", b.iface)
	for _, n := range names {
		if !strings.Contains(st, n) {
			t.Errorf("xdp-loader status does not list %s:\n%s", n, st)
		}
	}
}

// checkStatus fails t unless cacctl status shows the mode and priority,
// protected in full (exit 0).
func checkStatus(t *testing.T, b *box, mode string, prio uint32) {
	t.Helper()
	checkStatusOf(t, b, mode, prio, false)
}

// checkStatusOf is checkStatus; with egressLate, a status whose only
// reason to be degraded is the egress program is taken too: after the
// interface comes back in mode multi the daemon puts the XDP program back
// in the dispatcher, and the egress program does not always follow
// (a known gap, docs/design.md, "Sharing an interface").
func checkStatusOf(t *testing.T, b *box, mode string, prio uint32, egressLate bool) {
	t.Helper()
	var v struct {
		Interfaces []struct {
			Mode     string `json:"mode"`
			Priority uint32 `json:"priority"`
			Link     string `json:"link"`
		} `json:"interfaces"`
		Degraded []string `json:"degraded"`
	}
	var out, stderr string
	var err error
	testenv.Poll(10*time.Second, 100*time.Millisecond, func() bool {
		out, stderr, err = b.cacctlRun("status", "-o", "json")
		return err == nil
	})
	if jerr := json.Unmarshal([]byte(out), &v); jerr != nil || len(v.Interfaces) != 1 {
		t.Fatalf("cacctl status -o json: %v %v: %s\n%s", err, jerr, stderr, out)
	}
	if err != nil {
		onlyEgress := len(v.Degraded) > 0
		for _, why := range v.Degraded {
			onlyEgress = onlyEgress && strings.HasPrefix(why, "no egress program on ")
		}
		if !egressLate || !onlyEgress {
			t.Fatalf("cacctl status -o json: %v: %s\n%s", err, stderr, out)
		}
		t.Logf("degraded as it may be here: %v", v.Degraded)
	}
	if i := v.Interfaces[0]; i.Mode != mode || i.Priority != prio || i.Link != "active" {
		t.Errorf("cacctl status: mode %q priority %d link %q, want %q %d active", i.Mode, i.Priority, i.Link, mode, prio)
	}
}

// padiRejected is xdpcac's count of rejected PADIs.
func padiRejected(t *testing.T, b *box) uint64 {
	t.Helper()
	var v maps.StatsView
	out := b.cacctl(t, "show", "stats", "-o", "json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show stats -o json: %v\n%s", err, out)
	}
	return v.Classes["pppoe-padi"].Rejected
}

// padiStorm is n PADIs of one CPE, broadcast.
func padiStorm(n int) [][]byte {
	f := pkt.Frame(pkt.Ether{Dst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Broadcast: true}, pkt.PPPoE{Code: pkt.PADI})
	out := make([][]byte, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// udpFrames are n datagrams from the peer to the box's address and port.
func udpFrames(mac [6]byte, port uint16, n int) [][]byte {
	f := pkt.Frame(pkt.Ether{Dst: mac}, pkt.IPv4{}, pkt.UDP{Src: 40000, Dst: port}, pkt.Raw("x"))
	out := make([][]byte, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// udpReceived counts what a socket on port in ns receives of what send
// sends: what both programs passed up the stack.
func udpReceived(t *testing.T, ns string, port uint16, send func()) int {
	t.Helper()
	var conn net.PacketConn
	err := testenv.Do(ns, func() error {
		var err error
		conn, err = net.ListenPacket("udp4", net.JoinHostPort("192.0.2.2", strconv.Itoa(int(port))))
		return err
	})
	if err != nil {
		t.Fatalf("listen on port %d: %v", port, err)
	}
	defer conn.Close()
	send()
	n := 0
	buf := make([]byte, 2048)
	for {
		conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, _, err := conn.ReadFrom(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return n
			}
			t.Fatalf("read port %d: %v", port, err)
		}
		n++
	}
}
