package bench

import (
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// rejecting is the configuration of the xdpcac-rejected rows: every frame
// of a class but the first a second is rejected.
const rejecting = "classes:\n  pppoe-padi: {cps: 1, burst: 1}\n  l2tp-icrq: {cps: 1, burst: 1}\n  sip-invite: {cps: 1, burst: 1}\n"

// rcvBench is what BenchmarkReceiveCPU and BenchmarkReceiveScale flood: a
// veth pair between two new namespaces with threaded NAPI on the box end,
// the frames and their generators, and the switches of the box side.
type rcvBench struct {
	b       *testing.B
	tb      *harness.Testbed
	n       uint32 // frames a flood: 4,000,000 or XDPCAC_RCV_FRAMES
	frames  map[string][]byte
	one     *ebpf.Program            // sends the frame as it is
	spoofed map[string]*ebpf.Program // changes its source, by frame
	active  func()                   // the down of the setup that is up, for a failure's cleanup

	peerIndex int
	spoofs    map[string]spoofing        // how spoofed maps each frame
	paced     map[pacedKey]*ebpf.Program // generators that spin, made when first asked for
}

// How a spoofing generator changes a frame: spoofGen's kind and offset.
type spoofing struct{ kind, off int }

// A generator that spins before each frame: of a frame, spoofed or not.
type pacedKey struct {
	frame string
	spoof bool
	spin  int
}

// newRcvBench makes the testbed with veth (testenv.Veth, or vethQueues).
func newRcvBench(b *testing.B, veth func(testing.TB, string, string) (string, string)) *rcvBench {
	r := &rcvBench{b: b, n: 4_000_000}
	if s := os.Getenv("XDPCAC_RCV_FRAMES"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			b.Fatal(err)
		}
		r.n = uint32(v)
	}
	tb := &harness.Testbed{Box: testenv.Netns(b), Peer: testenv.Netns(b), State: harness.StateDir(b)}
	tb.BoxIface, tb.PeerIfc = veth(b, tb.Box, tb.Peer)
	r.tb = tb
	var peerIndex int
	if err := testenv.Do(tb.Peer, func() error {
		var err error
		peerIndex, err = testenv.InterfaceIndex(tb.PeerIfc)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	// NAPI on the box veth (GRO on; veth needs it to take redirected
	// frames), threaded: a queue's kernel thread does all of its receiving.
	testenv.Run(b, tb.Box, "ethtool", "-K", tb.BoxIface, "gro", "on")
	testenv.Run(b, tb.Box, "sh", "-c", "echo 1 > /sys/class/net/"+tb.BoxIface+"/threaded")

	eth := Ether{Dst: testenv.HardwareAddr(b, tb.Box, tb.BoxIface)}
	v4 := IPv4{Src: netip.MustParseAddr("198.51.100.1"), Dst: netip.MustParseAddr("203.0.113.1"), ID: ipv4ID}
	v6 := IPv6{Src: netip.MustParseAddr("2001:db8::1:1"), Dst: netip.MustParseAddr("2001:db8::2")}
	invite := SIPRequest("INVITE", harness.ToNoTag)
	r.frames = map[string][]byte{
		"padi":    Frame(Ether{Broadcast: true}, PPPoE{Code: PADI}),
		"icrq":    Frame(eth, v4, UDP{Dst: 1701}, L2TP{MsgType: ICRQ}),
		"invite4": Frame(eth, v4, UDP{Src: 5060, Dst: 5060}, invite),
		"invite6": Frame(eth, v6, UDP{Src: 5060, Dst: 5060}, invite),
		"other":   Frame(eth, v4, UDP{Src: 40000, Dst: 53}, Raw(strings.Repeat("\x00", 33))),
	}
	r.peerIndex, r.paced = peerIndex, map[pacedKey]*ebpf.Program{}
	r.spoofs = map[string]spoofing{
		"padi":    {spoofWord, 8},       // source MAC, bytes 2–5
		"icrq":    {spoofV4, 14},        // 198.51.100.0/24
		"invite4": {spoofV4, 14},        // 198.51.100.0/24
		"invite6": {spoofWord, 14 + 20}, // source, its low 32 bits
	}
	r.one = spoofGen(b, peerIndex, spoofNone, 0, 0)
	r.spoofed = map[string]*ebpf.Program{}
	for f, sp := range r.spoofs {
		r.spoofed[f] = spoofGen(b, peerIndex, sp.kind, sp.off, 0)
	}
	b.Cleanup(func() {
		if r.active != nil {
			r.active()
		}
	})
	return r
}

// gen is the generator of a row of frame, spoofed or not.
func (r *rcvBench) gen(frame string, spoof bool) *ebpf.Program {
	if spoof {
		return r.spoofed[frame]
	}
	return r.one
}

// pacedGen is the generator of a row of frame that counts to spin before
// it sends each frame.
func (r *rcvBench) pacedGen(frame string, spoof bool, spin int) *ebpf.Program {
	if spin == 0 {
		return r.gen(frame, spoof)
	}
	k := pacedKey{frame, spoof, spin}
	if !spoof {
		k.frame = "" // one generator sends any frame as it is
	}
	if p, ok := r.paced[k]; ok {
		return p
	}
	sp := spoofing{spoofNone, 0}
	if spoof {
		sp = r.spoofs[frame]
	}
	p := spoofGen(r.b, r.peerIndex, sp.kind, sp.off, spin)
	r.paced[k] = p
	return p
}

// up brings a setup of the box side up; down takes it down.
func (r *rcvBench) up(up, down func()) {
	up()
	r.active = down
}

func (r *rcvBench) down() {
	r.active()
	r.active = nil
}

// xdp attaches p to the box veth; noXDP detaches it.
func (r *rcvBench) xdp(p *ebpf.Program) func() {
	return func() {
		if err := setXDP(r.tb.Box, r.tb.BoxIface, p.FD()); err != nil {
			r.b.Fatal(err)
		}
	}
}

func (r *rcvBench) noXDP() { setXDP(r.tb.Box, r.tb.BoxIface, -1) }

// attach attaches xdpcac to the box veth with the configuration cfg.
func (r *rcvBench) attach(cfg string) func() {
	file := harness.WriteConfig(r.b, cfg)
	return func() {
		if out, err := r.cacctl("attach", r.tb.BoxIface, "--config", file); err != nil {
			r.b.Fatalf("cacctl attach: %v: %s", err, out)
		}
	}
}

// detach runs in the cleanup too, where it must not stop the rest.
func (r *rcvBench) detach() {
	if out, err := r.cacctl("detach", r.tb.BoxIface); err != nil {
		r.b.Errorf("cacctl detach: %v: %s", err, out)
	}
}

func (r *rcvBench) cacctl(args ...string) ([]byte, error) {
	args = append([]string{"--netns", r.tb.Box, "--state-dir", r.tb.State}, args...)
	return exec.Command(harness.CacctlBin, args...).CombinedOutput()
}
