package bench

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
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
	b      *testing.B
	tb     *harness.Testbed
	n      uint32 // frames a flood: 4,000,000 or XDPCAC_RCV_FRAMES
	frames map[string]rcvFrame
	active func() // the down of the setup that is up, for a failure's cleanup

	peerIndex int
	gens      map[genKey]*ebpf.Program // made when first asked for
	userspace bool                     // the rows run the userspace sender (gen_packet_test.go)
}

// A frame the benchmarks flood, and what its generators write into it.
type rcvFrame struct {
	data  []byte
	calls []int    // where every frame gets a new call (callOffsets); nil: copies of one
	spoof spoofing // how its spoofed rows change the source; spoofNone: it has none
}

// How a spoofing generator changes a frame: spoofGen's kind and offset.
type spoofing struct{ kind, off int }

// A generator: of a frame, spoofed or not, counting to spin before each.
type genKey struct {
	frame string
	spoof bool
	spin  int
}

// rcvFrames are the frames of the benchmarks, to the Ethernet address of
// eth (the box veth's).
//   - INVITEs are new calls (frameGen): an attacker does not send one
//     INVITE again and again, which the filter refuses as a retransmission
//     for less. invite4-retransmission is copies of invite4, that case.
//   - invite-sdp is what a softphone sends (sdpInvite), worst the dearest
//     INVITE the filter's bounds allow (worstInvite), both new calls.
//   - Spoofed rows change the source too: bytes 2–5 of a PADI's source
//     MAC; the last byte of an IPv4 source, the documentation range
//     allowing no more (spoofV4 keeps the header checksum, which the stack
//     checks before netfilter); the low 32 bits of an IPv6 source.
func rcvFrames(tb testing.TB, eth Ether) map[string]rcvFrame {
	tb.Helper()
	v4 := IPv4{Src: netip.MustParseAddr("198.51.100.1"), Dst: netip.MustParseAddr("203.0.113.1"), ID: ipv4ID}
	src6, dst6 := netip.MustParseAddr("2001:db8::1:1"), netip.MustParseAddr("2001:db8::2")
	sip := UDP{Src: 5060, Dst: 5060}
	invite := SIPRequest("INVITE", harness.ToNoTag)
	invite4 := Frame(eth, v4, sip, invite)
	invite6 := Frame(eth, IPv6{Src: src6, Dst: dst6}, sip, invite)
	sdp := Frame(eth, v4, sip, sdpInvite(v4.Src))
	worst := worstInvite(tb, eth, src6, dst6)
	ipSpoof := spoofing{spoofV4, 14}
	return map[string]rcvFrame{
		"padi":                   {data: Frame(Ether{Broadcast: true}, PPPoE{Code: PADI}), spoof: spoofing{spoofWord, 8}},
		"icrq":                   {data: Frame(eth, v4, UDP{Dst: 1701}, L2TP{MsgType: ICRQ}), spoof: ipSpoof},
		"invite4":                {data: invite4, calls: callOffsets(tb, invite4), spoof: ipSpoof},
		"invite4-retransmission": {data: invite4},
		"invite6":                {data: invite6, calls: callOffsets(tb, invite6), spoof: spoofing{spoofWord, 14 + 20}},
		"invite-sdp":             {data: sdp, calls: callOffsets(tb, sdp)},
		"worst":                  {data: worst, calls: callOffsets(tb, worst)},
		"other":                  {data: Frame(eth, v4, UDP{Src: 40000, Dst: 53}, Raw(strings.Repeat("\x00", 33)))},
	}
}

// newRcvBench makes the testbed with veth (testenv.Veth, or vethQueues).
func newRcvBench(b *testing.B, veth func(testing.TB, string, string) (string, string)) *rcvBench {
	r := &rcvBench{b: b, n: 4_000_000, gens: map[genKey]*ebpf.Program{}}
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
	if err := testenv.Do(tb.Peer, func() error {
		var err error
		r.peerIndex, err = testenv.InterfaceIndex(tb.PeerIfc)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	// NAPI on the box veth (GRO on; veth needs it to take redirected
	// frames), threaded: a queue's kernel thread does all of its receiving.
	testenv.Run(b, tb.Box, "ethtool", "-K", tb.BoxIface, "gro", "on")
	testenv.Run(b, tb.Box, "sh", "-c", "echo 1 > /sys/class/net/"+tb.BoxIface+"/threaded")
	r.frames = rcvFrames(b, Ether{Dst: testenv.HardwareAddr(b, tb.Box, tb.BoxIface)})
	r.useUserspaceGen()
	b.Cleanup(func() {
		if r.active != nil {
			r.active()
		}
	})
	return r
}

// jumbo raises the MTU of both veth ends to what the largest frame needs
// (rcvMaxFrame, the worst INVITE's size): a redirect checks it on the
// peer end, veth's receive on the box end. It is below the most veth
// allows an XDP program without frags support, so xdpcac still attaches
// in native mode (attach checks). Every other frame is far below either.
func (r *rcvBench) jumbo() {
	mtu := strconv.Itoa(rcvMaxFrame - 14)
	testenv.Run(r.b, r.tb.Peer, "ip", "link", "set", r.tb.PeerIfc, "mtu", mtu)
	testenv.Run(r.b, r.tb.Box, "ip", "link", "set", r.tb.BoxIface, "mtu", mtu)
}

// gen is the generator of a row of frame, spoofed or not.
func (r *rcvBench) gen(frame string, spoof bool) *ebpf.Program {
	return r.pacedGen(frame, spoof, 0)
}

// pacedGen is the generator of a row of frame that counts to spin before
// it sends each frame (0: flat out).
func (r *rcvBench) pacedGen(frame string, spoof bool, spin int) *ebpf.Program {
	spec := r.genSpecOf(frame, spoof, spin)
	k := genKey{frame, spoof, spin}
	if !spoof && spec.calls == nil {
		k.frame = "" // one generator sends any frame as it is
	}
	if p, ok := r.gens[k]; ok {
		return p
	}
	p := frameGen(r.b, r.peerIndex, spec)
	r.gens[k] = p
	return p
}

// genSpecOf is what the generator of a row of frame writes into each
// frame, spoofed or not, counting to spin before it sends each.
func (r *rcvBench) genSpecOf(frame string, spoof bool, spin int) genSpec {
	f, ok := r.frames[frame]
	spec, spoofable := specOf(f, spoof)
	if !ok || !spoofable {
		r.b.Fatalf("no generator of frame %q (spoofed: %v)", frame, spoof)
	}
	spec.spin = spin
	return spec
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
		// At an MTU a native program cannot take, attach falls back to
		// generic mode, which costs far more a frame: a row so measured
		// would say nothing of the filter.
		if err := testenv.Do(r.tb.Box, func() error {
			l, err := netlink.LinkByName(r.tb.BoxIface)
			if err == nil && l.Attrs().Xdp != nil && l.Attrs().Xdp.AttachMode == nl.XDP_ATTACHED_SKB {
				err = fmt.Errorf("xdpcac attached in generic mode at MTU %d", l.Attrs().MTU)
			}
			return err
		}); err != nil {
			r.b.Fatal(err)
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
