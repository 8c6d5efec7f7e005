package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// A row of BenchmarkReceiveCPU: one frame from one generator under one
// setup of the box side.
type rcvRow struct {
	name    string
	floor   string // the row of the same round that this one is a ratio to
	frame   []byte
	pace    func(spin int) *ebpf.Program // its generator, counting to spin before each frame (0: none)
	matched func() uint64                // frames the rule matched so far; nil: no check
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
// (receive_floors_test.go): a bare rate limit of PADI, and the search
// for a To header's line in an INVITE. Each row runs twice a round, flat
// out and paced (receive_paced_test.go), and each way has a table of its
// own. BENCHMARKS.md, "Receiving CPU per frame", "Receiving CPU paced,
// and reject records in slots" and "A refused PADI made cheaper", has the
// method.
func BenchmarkReceiveCPU(b *testing.B) {
	testenv.RequireBPF(b)
	testenv.RequireTool(b, "nft", "nftables")
	testenv.RequireTool(b, "iptables", "iptables")
	testenv.RequireTool(b, "ethtool", "ethtool")
	rb := newRcvBench(b, testenv.Veth)
	tb, box, bif, n := rb.tb, rb.tb.Box, rb.tb.BoxIface, rb.n
	row := func(prefix, frame, floor string, spoof bool, matched func() uint64) rcvRow {
		w := rcvRow{name: prefix + "/" + frame, floor: floor, frame: rb.frames[frame], matched: matched,
			pace: func(spin int) *ebpf.Program { return rb.pacedGen(frame, spoof, spin) }}
		if floor != "" {
			w.floor = "floor/" + floor
		}
		if spoof {
			w.name += "-spoofed"
		}
		return w
	}
	xdp, noXDP, attach, detach := rb.xdp, rb.noXDP, rb.attach, rb.detach
	classSeen := func(class string) func() uint64 {
		return func() uint64 {
			out, err := exec.Command(harness.CacctlBin, "--state-dir", tb.State, "show", "stats", "-o", "json").Output()
			if err != nil {
				b.Fatal(err)
			}
			var st struct {
				Classes map[string]struct{ Seen, Rejected uint64 }
			}
			if err := json.Unmarshal(out, &st); err != nil {
				b.Fatal(err)
			}
			return st.Classes[class].Seen
		}
	}
	const big = "{cps: 1000000000, burst: 1000000000, per-source: {cps: 1000000000, burst: 1000000000}}"
	const admitting = "classes:\n  pppoe-padi: " + big + "\n  l2tp-icrq: " + big + "\n  sip-invite: " + big + "\n"

	nftRules := func(rules string) (up, down func()) {
		file := b.TempDir() + "/rules.nft"
		body := fmt.Sprintf("table netdev xdpcac_rcv {\n%s\tchain ingress {\n\t\ttype filter hook ingress device %q priority 0;\n%s\t}\n}\n",
			"\tset padi { type ether_addr; size 65535; flags dynamic,timeout; timeout 10s; }\n", bif, rules)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
		return func() { testenv.Run(b, box, "nft", "-f", file) },
			func() { testenv.Command(box, "nft", "delete", "table", "netdev", "xdpcac_rcv").Run() }
	}
	nftUp, nftDown := nftRules("\t\tether type 0x8863 limit rate over 1/second counter drop\n" +
		"\t\tudp dport 5060 @th,64,56 0x494e5649544520 limit rate over 1/second counter drop\n")
	meterUp, meterDown := nftRules("\t\tether type 0x8863 add @padi { ether saddr limit rate over 1/second } counter drop\n")
	nftCounter := func(i int) func() uint64 {
		return func() uint64 {
			out := testenv.Run(b, box, "nft", "list", "chain", "netdev", "xdpcac_rcv", "ingress")
			m := regexp.MustCompile(`counter packets (\d+)`).FindAllStringSubmatch(out, -1)
			if len(m) <= i {
				b.Fatalf("nft counter %d not in:\n%s", i, out)
			}
			v, _ := strconv.ParseUint(m[i][1], 10, 64)
			return v
		}
	}
	iptUp := func() {
		testenv.Run(b, box, "ip", "addr", "add", "203.0.113.1/24", "dev", bif)
		testenv.Run(b, box, "iptables", "-t", "raw", "-A", "PREROUTING", "-p", "udp", "--dport", "5060",
			"-m", "string", "--algo", "bm", "--string", "INVITE ",
			"-m", "hashlimit", "--hashlimit-above", "1/sec", "--hashlimit-mode", "srcip", "--hashlimit-name", "xdpcac_rcv",
			"-j", "DROP")
	}
	iptDown := func() {
		testenv.Command(box, "iptables", "-t", "raw", "-F", "PREROUTING").Run()
		testenv.Command(box, "ip", "addr", "del", "203.0.113.1/24", "dev", bif).Run()
	}
	iptCounter := func() uint64 {
		out := testenv.Run(b, box, "iptables", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[2] == "DROP" {
				v, _ := strconv.ParseUint(f[0], 10, 64)
				return v
			}
		}
		b.Fatalf("no DROP rule in:\n%s", out)
		return 0
	}

	floor, empty := floorProg(b), emptyProg(b)
	var setups []rcvSetup
	setups = append(setups, rcvSetup{up: xdp(floor), down: noXDP, rows: []rcvRow{
		row("floor", "padi", "padi", false, nil), row("floor", "icrq", "icrq", false, nil),
		row("floor", "invite4", "invite4", false, nil), row("floor", "invite6", "invite6", false, nil),
		// What the spoofing generator's write into each frame costs a
		// receiver that reads that line: the spoofed rows pay it too.
		row("floor", "padi", "padi", true, nil), row("floor", "icrq", "icrq", true, nil),
		row("floor", "invite4", "invite4", true, nil), row("floor", "invite6", "invite6", true, nil),
	}})
	setups = append(setups, rcvSetup{up: xdp(floorReadProg(b)), down: noXDP, rows: []rcvRow{
		row("floor-read", "invite4", "invite4", false, nil), row("floor-read", "invite6", "invite6", false, nil),
	}})
	setups = append(setups, rcvSetup{up: xdp(floorLinesProg(b)), down: noXDP, rows: []rcvRow{
		row("floor-lines", "invite4", "invite4", false, nil), row("floor-lines", "invite6", "invite6", false, nil),
	}})
	gcra, gcraRefused := floorGCRAProg(b)
	setups = append(setups, rcvSetup{up: xdp(gcra), down: noXDP, rows: []rcvRow{
		row("floor-gcra", "padi", "padi", false, gcraRefused),
	}})
	setups = append(setups, rcvSetup{up: xdp(empty), down: noXDP, rows: []rcvRow{row("empty", "other", "", false, nil)}})
	var rejected, admitted []rcvRow
	for _, f := range []struct{ frame, class string }{{"padi", "pppoe-padi"}, {"icrq", "l2tp-icrq"}, {"invite4", "sip-invite"}, {"invite6", "sip-invite"}} {
		rejected = append(rejected, row("xdpcac-rejected", f.frame, f.frame, false, classSeen(f.class)),
			row("xdpcac-rejected", f.frame, f.frame, true, classSeen(f.class)))
		admitted = append(admitted, row("xdpcac-admitted", f.frame, f.frame, false, classSeen(f.class)))
	}
	setups = append(setups, rcvSetup{up: attach(rejecting), down: detach, rows: rejected})
	setups = append(setups, rcvSetup{up: attach(admitting), down: detach, rows: append(admitted, row("xdpcac-open", "other", "", false, nil))})
	setups = append(setups, rcvSetup{up: nftUp, down: nftDown, rows: []rcvRow{
		row("nft-limit", "padi", "padi", false, nftCounter(0)), row("nft-limit", "padi", "padi", true, nftCounter(0)),
		row("nft-string", "invite4", "invite4", false, nftCounter(1)), row("nft-string", "invite4", "invite4", true, nftCounter(1)),
	}})
	setups = append(setups, rcvSetup{up: meterUp, down: meterDown, rows: []rcvRow{
		row("nft-meter", "padi", "padi", false, nftCounter(0)), row("nft-meter", "padi", "padi", true, nftCounter(0)),
	}})
	setups = append(setups, rcvSetup{up: iptUp, down: iptDown, rows: []rcvRow{
		row("iptables", "invite4", "invite4", false, iptCounter), row("iptables", "invite4", "invite4", true, iptCounter),
	}})

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
	// Every row twice a round: flat out, and paced (receive_paced_test.go).
	const rounds = 3
	flat, paced := map[string][]rcvSample{}, map[string][]rcvSample{}
	var order []string
	for b.Loop() {
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
						// A meter keyed by the source never drops a frame of a
						// new source: that row's share is the figure, not a fault.
						if sm.matched >= 0 && sm.matched < 0.9 && row.name != "nft-meter/padi-spoofed" {
							b.Fatalf("%s: the rule matched only %.1f%% of %d frames", row.name, 100*sm.matched, sm.received)
						}
					}
				}
				rb.down()
			}
		}
	}
	if fixedSpin < 0 {
		reportReceiveCPU(b, "flat out", "", order, setups, flat, n)
	}
	reportReceiveCPU(b, "paced", "paced-", order, setups, paced, n)
}

// measureRow floods n copies of row's frame from gen and measures the NAPI
// thread.
func measureRow(b *testing.B, tb *harness.Testbed, row rcvRow, gen *ebpf.Program, n uint32) rcvSample {
	b.Helper()
	pid := napiThread(b, tb.BoxIface, 1)
	rx0, tx0 := ethStats(b, tb.Box, tb.BoxIface), ethStats(b, tb.Peer, tb.PeerIfc)
	var m0 uint64
	if row.matched != nil {
		m0 = row.matched()
	}
	t0, c0 := threadCPU(b, pid), cpuBusy(b, 1)
	start := time.Now()
	floodPinned(b, tb.Peer, gen, row.frame, n, 0)
	elapsed := time.Since(start)
	time.Sleep(20 * time.Millisecond) // the ring drains
	t1, c1 := threadCPU(b, pid), cpuBusy(b, 1)
	rx1, tx1 := ethStats(b, tb.Box, tb.BoxIface), ethStats(b, tb.Peer, tb.PeerIfc)
	// The peer's tx_queue_0_xdp_xmit are the frames its redirects put on
	// the box's ring (the box's rx_queue_0_xdp_packets, once the ring has
	// drained); its xdp_xmit_errors, those the full ring refused.
	received := tx1["tx_queue_0_xdp_xmit"] - tx0["tx_queue_0_xdp_xmit"]
	lost := tx1["tx_queue_0_xdp_xmit_errors"] - tx0["tx_queue_0_xdp_xmit_errors"]
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
