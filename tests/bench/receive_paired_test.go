package bench

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// BenchmarkReceiveDeniedPaired measures what BenchmarkReceiveDenied's
// denied rows measure, the NAPI thread's CPU per frame received from a
// flood, against the parse-and-drop floor, but in pairs close enough in
// time that the shared machine's drift, larger than the effect in three
// rounds of whole setups, falls on both sides of a ratio: xdp_cac is
// loaded as attach loads it (without the dispatcher attach puts in
// front, so the two sides differ by the program alone), once a setup,
// and the box veth's program is swapped between a flood and the next.
// A round floods each frame once through the floor and once through
// each setup, in an order that turns with the round; every ratio is to
// the floor of its frame and round. The report gives each row's median
// over the rounds and the order statistics around it that hold the
// median with at least 95 % confidence, whatever the distribution.
// Where the kernel refuses live frames, the userspace sender's frames
// reach the box veth as skbs, and the floor carries veth's copy of each
// into a page of its own (hundreds of ns); XDPCAC_RCV_HOP=1 sends them
// through a redirect hop instead (redirectHop), so that they reach the
// box as xdp_frames, as live frames and a NIC's do.
// XDPCAC_RCV_FRAMES (200,000) and XDPCAC_RCV_ROUNDS (15) size it.
// BENCHMARKS.md, "Denied sources and SIP connections", has the figures.
func BenchmarkReceiveDeniedPaired(b *testing.B) {
	testenv.RequireBPF(b)
	testenv.RequireTool(b, "ethtool", "ethtool")
	rb := newRcvBench(b, testenv.Veth)
	// Floods shorter than the other receive rows' (rb.n), many more of
	// them: XDPCAC_RCV_FRAMES still sets it.
	n, rounds := uint32(200_000), rcvRounds(b, 15)
	if os.Getenv("XDPCAC_RCV_FRAMES") != "" {
		n = rb.n
	}
	deniedFrames(b, rb.frames, Ether{Dst: testenv.HardwareAddr(b, rb.tb.Box, rb.tb.BoxIface)})
	static, auto, both := deniedAccess(netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("192.0.2.0/24"))
	limited := deniedPolicy(b)

	type side struct {
		name    string
		prog    *ebpf.Program
		matched func() uint64
	}
	setups := []side{}
	for _, s := range []struct {
		name   string
		access func(*bpf.XdpObjects) error
	}{{"static-deny", static}, {"auto-deny", auto}, {"auto+lists", both}} {
		o := deniedObjects(b, limited, s.access)
		setups = append(setups, side{s.name, o.XdpCac, deniedFrom(b, o.Stats)})
	}
	// SYN rows write a new port each frame, as BenchmarkReceiveDenied's.
	floor, floorSYN := floorProg(b), floorSYNProg(b)
	frames := []struct {
		row, frame string
		spoof      bool
		floor      *ebpf.Program
	}{
		{"invite4", "invite4", false, floor},
		{"options4", "options4", false, floor},
		{"invite4-spoofed", "invite4", true, floor},
		{"syn4", "syn4", true, floorSYN},
	}
	b.Cleanup(func() { setXDP(rb.tb.Box, rb.tb.BoxIface, -1) })
	gen, how := rb.rowGen, rb.genName()
	switch hop := os.Getenv("XDPCAC_RCV_HOP"); {
	case hop != "" && hop != "1":
		b.Fatalf("XDPCAC_RCV_HOP=%q: want 1 or nothing", hop)
	case hop == "1" && !rb.userspace:
		b.Log("XDPCAC_RCV_HOP=1: live frames reach the box as xdp_frames already; no hop")
	case hop == "1":
		hop := rb.redirectHop()
		gen = func(frame string, spoof bool, spin int) rcvGen {
			return rcvGen{pkt: &packetGen{iface: hop, spec: rb.genSpecOf(frame, spoof, spin)}}
		}
		how = "generator: userspace AF_PACKET sender through an XDP redirect hop, xdp_frames redirected"
	}

	ratios := map[string][]float64{}
	ns := map[string][]float64{}
	var order []string
	for b.Loop() {
		for r := range rounds {
			for _, f := range frames {
				sides := append([]side{{"floor", f.floor, nil}}, setups...)
				// The floor first in one round, last in another, so
				// neither side of a ratio always follows the other.
				k := r % len(sides)
				sides = slices.Concat(sides[k:], sides[:k])
				got := map[string]float64{}
				for _, s := range sides {
					if err := setXDP(rb.tb.Box, rb.tb.BoxIface, s.prog.FD()); err != nil {
						b.Fatal(err)
					}
					row := rcvRow{name: s.name + "/" + f.row, frame: rb.frames[f.frame].data, matched: s.matched}
					sm := measureRow(b, rb.tb, row, gen(f.frame, f.spoof, 0), n)
					if sm.matched >= 0 && sm.matched < 0.99 {
						b.Fatalf("%s: only %.1f%% of %d frames were denied", row.name, 100*sm.matched, sm.received)
					}
					got[s.name] = sm.ns
					if r == 0 {
						order = append(order, row.name)
					}
					ns[row.name] = append(ns[row.name], sm.ns)
				}
				for _, s := range setups {
					ratios[s.name+"/"+f.row] = append(ratios[s.name+"/"+f.row], got[s.name]/got["floor"])
				}
			}
		}
	}
	reportPaired(b, fmt.Sprintf("%s: %d frames a flood, NAPI thread on CPU 1, %d rounds", how, n, rounds), order, ns, ratios)
}

// redirectHop makes a veth pair in the peer namespace whose far end
// redirects every frame it receives to the peer veth, and returns the
// near end, for the userspace sender to send on. The hop's receive (on
// the sender's CPU, its NAPI run from the sender's send) takes each skb
// into an XDP buffer and redirects it; the peer veth puts it on the box
// veth's ring as an xdp_frame, which the box's NAPI thread takes as it
// takes a live frame, with no skb and no copy.
func (r *rcvBench) redirectHop() string {
	near, far := testenv.Veth(r.b, r.tb.Peer, r.tb.Peer)
	redirect := xdpProg(r.b, "rcv_hop", asm.Instructions{
		asm.Mov.Imm(asm.R1, int32(r.peerIndex)),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
	})
	if err := setXDP(r.tb.Peer, far, redirect.FD()); err != nil {
		r.b.Fatal(err)
	}
	// As on the peer veth (useUserspaceGen): with TSO on, veth hands
	// the socket's skbs to the far end's backlog, not its NAPI ring.
	testenv.Run(r.b, r.tb.Peer, "ethtool", "-K", near, "tso", "off")
	return near
}

// rcvRounds is XDPCAC_RCV_ROUNDS, or def where it is not set.
func rcvRounds(b *testing.B, def int) int {
	s := os.Getenv("XDPCAC_RCV_ROUNDS")
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("XDPCAC_RCV_ROUNDS=%q: want a count of rounds", s)
	}
	return v
}

// deniedFrom counts the frames an xdp_cac of its own denied, on every
// CPU, by the static lists or the deny table.
func deniedFrom(b *testing.B, stats *ebpf.Map) func() uint64 {
	return func() uint64 {
		var per []bpf.XdpCacStats
		if err := stats.Lookup(uint32(0), &per); err != nil {
			b.Fatal(err)
		}
		var sum uint64
		for _, s := range per {
			sum += s.DeniedStatic + s.DeniedAuto
		}
		return sum
	}
}

// reportPaired prints BenchmarkReceiveDeniedPaired's table: each row's
// median ns a frame and, for a setup's row, its median ratio to the floor
// with the interval that holds the median with at least 95 % confidence,
// and the target on the interval's top.
func reportPaired(b *testing.B, how string, order []string, ns, ratios map[string][]float64) {
	fmt.Printf("\nReceiving CPU per frame, paired with the floor, flat out, %s\n", how)
	fmt.Printf("%-28s %9s %8s %17s  %s\n", "row", "ns/frame", "x floor", "95% interval", "target <= 1.30")
	for _, row := range order {
		r, ok := ratios[row]
		if !ok {
			fmt.Printf("%-28s %9.1f\n", row, medianOf(ns[row]))
			continue
		}
		lo, hi := medianInterval(r)
		verdict := "missed"
		if hi <= 1.3 {
			verdict = "met"
		}
		fmt.Printf("%-28s %9.1f %8.3f   [%5.3f, %5.3f]  %s\n", row, medianOf(ns[row]), medianOf(r), lo, hi, verdict)
		b.ReportMetric(medianOf(r), row+"-x-floor")
		b.ReportMetric(hi, row+"-x-floor-hi")
	}
}

// medianInterval is the distribution-free interval of the median of v:
// its k-th smallest and k-th largest, k the largest for which a
// Binomial(len(v), 1/2) falls below k with at most 2.5 % chance. With
// fewer than 6 values no such k is 1 or more, and it is v's range.
func medianInterval(v []float64) (lo, hi float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	k, tail := 0, 0.0
	for j := 0; j < n/2; j++ {
		tail += binomial(n, j) / math.Pow(2, float64(n))
		if tail > 0.025 {
			break
		}
		k = j + 1
	}
	if k == 0 {
		return s[0], s[n-1]
	}
	return s[k-1], s[n-k]
}

// binomial is n choose k.
func binomial(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// TestMedianInterval holds medianInterval to the order statistics of the
// tables: of 15 values the 4th smallest and largest (96.5 %), of 6 the
// extremes (96.9 %), of 5 the range for want of any.
func TestMedianInterval(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i) // descending: the function sorts
		}
		return v
	}
	for _, c := range []struct {
		n      int
		lo, hi float64
	}{{15, 4, 12}, {6, 1, 6}, {5, 1, 5}, {20, 6, 15}, {1, 1, 1}} {
		if lo, hi := medianInterval(seq(c.n)); lo != c.lo || hi != c.hi {
			t.Errorf("%d values: [%v, %v], want [%v, %v]", c.n, lo, hi, c.lo, c.hi)
		}
	}
}
