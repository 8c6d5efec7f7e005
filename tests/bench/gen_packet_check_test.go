package bench

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestPacketGenStamps holds the userspace sender's stamping (stampInto)
// to frameGen's program, byte for byte: for every frame the receive
// benchmarks flood, spoofed or not, it runs the program, reads back the
// random words it wrote (the call's letters, the source's last byte or
// word, the TCP port), and stamps a copy of the frame with them.
func TestPacketGenStamps(t *testing.T) {
	testenv.RequireBPF(t)
	frames := rcvFrames(t, Ether{})
	deniedFrames(t, frames, Ether{})
	for _, name := range slices.Sorted(maps.Keys(frames)) {
		f := frames[name]
		for _, spoof := range []bool{false, true} {
			spec, ok := specOf(f, spoof)
			if !ok {
				continue
			}
			gen := frameGen(t, 1, spec)
			for range 8 {
				_, out, err := gen.Test(f.data)
				if err != nil || len(out) != len(f.data) {
					t.Fatalf("generator of %s: %v, %d bytes", name, err, len(out))
				}
				var w []uint32
				if len(f.calls) > 0 {
					var r uint32
					for i, c := range out[f.calls[0] : f.calls[0]+callRun] {
						r |= uint32(c-'a') << (4 * i)
					}
					w = append(w, r)
				}
				off := spec.off
				switch spec.kind {
				case spoofWord:
					w = append(w, binary.LittleEndian.Uint32(out[off:]))
				case spoofV4, spoofV4TCP:
					w = append(w, uint32(out[off+15]))
				}
				if spec.kind == spoofTCPPort || spec.kind == spoofV4TCP {
					w = append(w, uint32(binary.BigEndian.Uint16(out[off+20:])))
				}
				var words [3]uint32
				copy(words[:], w)
				got := bytes.Clone(f.data)
				stampInto(got, spec, words)
				if !bytes.Equal(got, out) {
					t.Fatalf("%s (spoofed %v): stampInto with %x differs from the program's frame", name, spoof, w)
				}
			}
		}
	}
}

// TestPacketGen floods a veth pair with the userspace sender, a floor
// on the far end: every frame it sends is either taken by the far end's
// NAPI thread from its ring and dropped by the floor (so its rows measure
// that thread, as the live-frame generator's do), or dropped by veth_xmit
// at a full ring (the ring fills: the sender keeps more in flight); and
// with no XDP program on the far end as well.
func TestPacketGen(t *testing.T) {
	testenv.RequireBPF(t)
	testenv.RequireTool(t, "ethtool", "ethtool")
	box, peer := testenv.Netns(t), testenv.Netns(t)
	boxIf, peerIf := testenv.Veth(t, box, peer)
	testenv.Run(t, box, "ethtool", "-K", boxIf, "gro", "on")
	testenv.Run(t, box, "sh", "-c", "echo 1 > /sys/class/net/"+boxIf+"/threaded")
	testenv.Run(t, peer, "ethtool", "-K", peerIf, "tso", "off")
	frames := rcvFrames(t, Ether{Dst: testenv.HardwareAddr(t, box, boxIf)})
	if err := setXDP(box, boxIf, floorProg(t).FD()); err != nil {
		t.Fatal(err)
	}
	dropped := func() uint64 {
		s := strings.TrimSpace(testenv.Run(t, peer, "cat", "/sys/class/net/"+peerIf+"/statistics/tx_dropped"))
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("tx_dropped of %s: %q", peerIf, s)
		}
		return n
	}
	const n = 20_000
	f := frames["invite4"]
	spec := genSpec{calls: f.calls, kind: f.spoof.kind, off: f.spoof.off}
	// flood sends n frames and returns how many the box's NAPI took from
	// its ring, how many of those XDP dropped, and how many veth_xmit
	// dropped at a full ring.
	flood := func() (got, drops, lost uint64) {
		rx0, d0 := ethStats(t, box, boxIf), dropped()
		if err := (&packetGen{iface: peerIf, spec: spec}).flood(peer, f.data, n, 0); err != nil {
			t.Fatal(err)
		}
		var rx map[string]uint64
		testenv.WaitFor(t, func() bool {
			rx, lost = ethStats(t, box, boxIf), dropped()-d0
			return rx["rx_queue_0_xdp_packets"]-rx0["rx_queue_0_xdp_packets"]+lost >= n
		})
		return rx["rx_queue_0_xdp_packets"] - rx0["rx_queue_0_xdp_packets"], rx["rx_queue_0_xdp_drops"] - rx0["rx_queue_0_xdp_drops"], lost
	}
	// NAPI may take a few frames of the peer's own besides (IPv6
	// neighbour discovery), which the floor passes.
	const stray = 64
	got, drops, lost := flood()
	if got+lost < n || got+lost > n+stray || drops > got || drops+stray < got || got < n/2 {
		t.Errorf("%d frames sent: %d taken by NAPI, %d of them dropped by the floor, %d dropped at xmit", n, got, drops, lost)
	}
	t.Logf("floor: %d frames sent: %d taken by NAPI and dropped by the floor, %d dropped at xmit", n, got, lost)
	// With no XDP program (the nftables rows), NAPI takes them too: the
	// peer's TSO is off, or veth would hand them to the backlog.
	if err := setXDP(box, boxIf, -1); err != nil {
		t.Fatal(err)
	}
	got, drops, lost = flood()
	if got+lost < n || got+lost > n+stray || drops != 0 || got < n/2 {
		t.Errorf("no XDP: %d frames sent: %d taken by NAPI, %d dropped by XDP, %d dropped at xmit", n, got, drops, lost)
	}
	t.Logf("no XDP: %d frames sent: %d taken by NAPI, %d dropped at xmit", n, got, lost)
}
