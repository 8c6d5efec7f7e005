package bench

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// A row of BenchmarkReceiveCPU: one frame from one generator under one
// setup of the box side.
type rcvRow struct {
	name    string
	floor   string // the row of the same round that this one is a ratio to
	frame   []byte
	pace    func(spin int) rcvGen // its generator, counting to spin before each frame (0: none)
	matched func() uint64         // frames the rule matched so far; nil: no check
}

// A setup of the box side, brought up and taken down once a round.
type rcvSetup struct {
	up, down func()
	rows     []rcvRow
}

type rcvSample struct {
	ns, busy float64 // NAPI thread's ns and CPU 1's busy ns, per frame received
	received uint64
	lost     float64 // share of the frames sent that the full ring refused
	spin     int     // what the generator counted to before each frame
	secs     float64 // how long the flood took
	matched  float64 // share of the received frames the rule matched; -1: none
}

// BenchmarkReceiveCPU floods a veth pair in live-frame mode and measures
// what each received frame costs the receiving CPU: the NAPI thread of the
// box veth runs threaded on CPU 1, the generator on CPU 0, and a row's
// figure is the thread's CPU time divided by the frames it received.
// Every row is compared with the floor of its round: a hand-written XDP
// program that reads what a filter of that frame must read and drops it.
// Beside it, floors that do more of the job with nothing of xdpcac's
// (receive_floors_test.go): a bare rate limit of PADI and ICRQ, and the
// search for a To header's line in an INVITE. Every INVITE row but the
// retransmission ones sends a new call each frame, as a flood does
// (rcvFrames); beside the typical INVITE, one with an SDP body and the
// dearest one the filter's bounds allow (worstInvite). Each row runs
// twice a round, flat out and paced (receive_paced_test.go), and each way
// has a table of its own. BENCHMARKS.md, "Receiving CPU per frame",
// "Receiving CPU paced, and reject records in slots" and "A refused PADI
// made cheaper", has the method.
func BenchmarkReceiveCPU(b *testing.B) {
	testenv.RequireBPF(b)
	testenv.RequireTool(b, "nft", "nftables")
	testenv.RequireTool(b, "iptables", "iptables")
	testenv.RequireTool(b, "ethtool", "ethtool")
	rb := newRcvBench(b, testenv.Veth)
	rb.jumbo() // for the worst INVITE
	n := rb.n
	row := rb.row
	// rows are rows of frames, each a ratio to its own floor, spoofed or
	// not; matched, if not nil, gives each frame's counter.
	rows := func(prefix string, spoof bool, matched func(frame string) func() uint64, frames ...string) []rcvRow {
		var v []rcvRow
		for _, f := range frames {
			var m func() uint64
			if matched != nil {
				m = matched(f)
			}
			v = append(v, row(prefix, f, f, spoof, m))
		}
		return v
	}
	classOf := func(frame string) func() uint64 {
		switch frame {
		case "padi":
			return rb.classSeen("pppoe-padi")
		case "icrq":
			return rb.classSeen("l2tp-icrq")
		}
		return rb.classSeen("sip-invite")
	}
	const big = "{cps: 1000000000, burst: 1000000000, per-source: {cps: 1000000000, burst: 1000000000}}"
	const admitting = "classes:\n  pppoe-padi: " + big + "\n  l2tp-icrq: " + big + "\n  sip-invite: " + big + "\n"
	nftUp, nftDown := rb.nftRules("\t\tether type 0x8863 limit rate over 1/second counter drop\n" +
		"\t\tudp dport 5060 @th,64,56 0x494e5649544520 limit rate over 1/second counter drop\n")
	meterUp, meterDown := rb.nftRules("\t\tether type 0x8863 add @padi { ether saddr limit rate over 1/second } counter drop\n")
	nftPADI, nftINVITE := rb.nftCounter(0), rb.nftCounter(1)
	gcra, gcraRefused := floorGCRAProg(b)
	spoofable := []string{"padi", "icrq", "invite4", "invite6"}
	cat := func(v ...[]rcvRow) []rcvRow { return slices.Concat(v...) }
	setups := []rcvSetup{
		{up: rb.xdp(floorProg(b)), down: rb.noXDP, rows: cat(
			rows("floor", false, nil, "padi", "icrq", "invite4", "invite6", "invite4-retransmission", "invite-sdp", "worst"),
			// What the spoofing generator's write into each frame costs a
			// receiver that reads that line: the spoofed rows pay it too.
			rows("floor", true, nil, spoofable...))},
		{up: rb.xdp(floorReadProg(b)), down: rb.noXDP, rows: rows("floor-read", false, nil, "invite4", "invite6")},
		{up: rb.xdp(floorLinesProg(b)), down: rb.noXDP, rows: cat(
			rows("floor-lines", false, nil, "invite4", "invite6", "invite-sdp", "worst"),
			rows("floor-lines", true, nil, "invite4"))},
		{up: rb.xdp(gcra), down: rb.noXDP, rows: rows("floor-gcra", false, func(string) func() uint64 { return gcraRefused }, "padi", "icrq")},
		{up: rb.xdp(emptyProg(b)), down: rb.noXDP, rows: []rcvRow{row("empty", "other", "", false, nil)}},
		{up: rb.attach(rejecting), down: rb.detach, rows: cat(
			rows("xdpcac-rejected", false, classOf, spoofable...),
			rows("xdpcac-rejected", true, classOf, spoofable...),
			rows("xdpcac-rejected", false, classOf, "invite4-retransmission", "invite-sdp", "worst"))},
		{up: rb.attach(admitting), down: rb.detach, rows: cat(
			rows("xdpcac-admitted", false, classOf, spoofable...),
			[]rcvRow{row("xdpcac-open", "other", "", false, nil)})},
		{up: nftUp, down: nftDown, rows: []rcvRow{
			row("nft-limit", "padi", "padi", false, nftPADI), row("nft-limit", "padi", "padi", true, nftPADI),
			row("nft-string", "invite4", "invite4", false, nftINVITE), row("nft-string", "invite4", "invite4", true, nftINVITE),
			row("nft-string", "invite-sdp", "invite-sdp", false, nftINVITE),
		}},
		{up: meterUp, down: meterDown, rows: []rcvRow{
			row("nft-meter", "padi", "padi", false, nftPADI), row("nft-meter", "padi", "padi", true, nftPADI),
		}},
		{up: rb.iptUp, down: rb.iptDown, rows: []rcvRow{
			row("iptables", "invite4", "invite4", false, rb.iptCounter), row("iptables", "invite4", "invite4", true, rb.iptCounter),
			row("iptables", "invite-sdp", "invite-sdp", false, rb.iptCounter),
		}},
	}

	var (
		order       []string
		flat, paced map[string][]rcvSample
		flatToo     bool
	)
	for b.Loop() {
		// A meter keyed by the source never drops a frame of a new
		// source: that row's share is the figure, not a fault.
		order, flat, paced, flatToo = rb.measureSetups(setups, func(row string) bool { return row == "nft-meter/padi-spoofed" })
	}
	if flatToo {
		reportReceiveCPU(b, "flat out, "+rb.genName(), "", order, setups, flat, n)
	}
	reportReceiveCPU(b, "paced, "+rb.genName(), "paced-", order, setups, paced, n)
}

// measureSetups runs every row of setups in three rounds, each row twice
// a round: flat out, and paced (receive_paced_test.go). It returns the
// rows' names in the order they ran, their samples flat out and paced,
// and whether the flat-out ones were measured (not under XDPCAC_RCV_SPIN).
// A row whose rule matched under 90 % of its frames fails the benchmark,
// but for the rows partial names.
func (rb *rcvBench) measureSetups(setups []rcvSetup, partial func(row string) bool) (order []string, flat, paced map[string][]rcvSample, flatToo bool) {
	b, tb, n := rb.b, rb.tb, rb.n
	// XDPCAC_RCV_ONLY runs only the rows whose names it matches, to
	// profile one, say; a ratio needs its floor's row too.
	var only *regexp.Regexp
	if s := os.Getenv("XDPCAC_RCV_ONLY"); s != "" {
		only = regexp.MustCompile(s)
	}
	// XDPCAC_RCV_SPIN runs every row paced at that spin alone, to profile
	// one, say, rather than flat out and at the spin bestPace finds.
	fixedSpin := -1
	if s := os.Getenv("XDPCAC_RCV_SPIN"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			b.Fatalf("XDPCAC_RCV_SPIN=%q: want a count", s)
		}
		fixedSpin = v
	}
	const rounds = 3
	flat, paced = map[string][]rcvSample{}, map[string][]rcvSample{}
	for r := 0; r < rounds; r++ {
		for _, s := range setups {
			rb.up(s.up, s.down)
			for _, row := range s.rows {
				if only != nil && !only.MatchString(row.name) {
					continue
				}
				if r == 0 {
					order = append(order, row.name)
				}
				type mode struct {
					results map[string][]rcvSample
					spin    int
				}
				modes := []mode{{flat, 0}, {paced, fixedSpin}}
				if fixedSpin < 0 {
					modes[1].spin = bestPace(b, tb, row)
				} else {
					modes = modes[1:]
				}
				for _, m := range modes {
					sm := measureRow(b, tb, row, row.pace(m.spin), n)
					sm.spin = m.spin
					m.results[row.name] = append(m.results[row.name], sm)
					if sm.matched >= 0 && sm.matched < 0.9 && !partial(row.name) {
						b.Fatalf("%s: the rule matched only %.1f%% of %d frames", row.name, 100*sm.matched, sm.received)
					}
				}
			}
			rb.down()
		}
	}
	return order, flat, paced, fixedSpin < 0
}

// row is a row of frame under the setup named prefix, a ratio to the
// floor row of floorFrame ("": none), spoofed or not; matched, if not
// nil, counts the frames its rule matched.
func (rb *rcvBench) row(prefix, frame, floorFrame string, spoof bool, matched func() uint64) rcvRow {
	w := rcvRow{name: prefix + "/" + frame, frame: rb.frames[frame].data, matched: matched,
		pace: func(spin int) rcvGen { return rb.rowGen(frame, spoof, spin) }}
	if floorFrame != "" {
		w.floor = "floor/" + floorFrame
	}
	if spoof {
		w.name += "-spoofed"
	}
	return w
}

// measureRow floods n copies of row's frame from gen and measures the NAPI
// thread.
func measureRow(b *testing.B, tb *harness.Testbed, row rcvRow, gen rcvGen, n uint32) rcvSample {
	b.Helper()
	pid := napiThread(b, tb.BoxIface, 1)
	rx0, tx0 := ethStats(b, tb.Box, tb.BoxIface), ethStats(b, tb.Peer, tb.PeerIfc)
	var m0 uint64
	if row.matched != nil {
		m0 = row.matched()
	}
	t0, c0 := threadCPU(b, pid), cpuBusy(b, 1)
	start := time.Now()
	if err := gen.flood(tb.Peer, row.frame, n, 0); err != nil {
		// EINVAL: a frame larger than the live-frame mode takes (rcvMaxFrame).
		b.Fatalf("%s: flood of %d-byte frames: %v", row.name, len(row.frame), err)
	}
	elapsed := time.Since(start)
	time.Sleep(20 * time.Millisecond) // the ring drains
	t1, c1 := threadCPU(b, pid), cpuBusy(b, 1)
	rx1, tx1 := ethStats(b, tb.Box, tb.BoxIface), ethStats(b, tb.Peer, tb.PeerIfc)
	// The peer's tx_queue_0_xdp_xmit are the frames its redirects put on
	// the box's ring (the box's rx_queue_0_xdp_packets, once the ring has
	// drained); its xdp_xmit_errors, those the full ring refused.
	received := tx1["tx_queue_0_xdp_xmit"] - tx0["tx_queue_0_xdp_xmit"]
	lost := tx1["tx_queue_0_xdp_xmit_errors"] - tx0["tx_queue_0_xdp_xmit_errors"]
	if gen.pkt != nil {
		// The userspace sender's skbs: the box's NAPI took from its ring
		// those it received; the rest veth_xmit dropped at the full ring
		// (or the socket was refused).
		received = rx1["rx_queue_0_xdp_packets"] - rx0["rx_queue_0_xdp_packets"]
		lost = uint64(n) - min(received, uint64(n))
	}
	if os.Getenv("XDPCAC_RCV_DEBUG") != "" {
		for k := range rx1 {
			if d := rx1[k] - rx0[k]; d != 0 {
				b.Logf("%s: box %s +%d", row.name, k, d)
			}
		}
		for k := range tx1 {
			if d := tx1[k] - tx0[k]; d != 0 {
				b.Logf("%s: peer %s +%d", row.name, k, d)
			}
		}
	}
	if received == 0 {
		b.Fatalf("%s: no frame received", row.name)
	}
	if received+lost != uint64(n) {
		b.Logf("%s: %d sent, %d received, %d lost at xmit", row.name, n, received, lost)
	}
	s := rcvSample{secs: elapsed.Seconds(), ns: float64(t1-t0) / float64(received), busy: float64(c1-c0) / float64(received), received: received, matched: -1,
		lost: float64(lost) / float64(received+lost)}
	if row.matched != nil {
		s.matched = float64(row.matched()-m0) / float64(received)
	}
	return s
}
