package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"sort"
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
	gen     *ebpf.Program
	matched func() uint64 // frames the rule matched so far; nil: no check
}

// A setup of the box side, brought up and taken down once a round.
type rcvSetup struct {
	up, down func()
	rows     []rcvRow
}

type rcvSample struct {
	ns, busy float64 // NAPI thread's ns and CPU 1's busy ns, per frame received
	received uint64
	secs     float64 // how long the flood took
	matched  float64 // share of the received frames the rule matched; -1: none
}

// BenchmarkReceiveCPU floods a veth pair in live-frame mode and measures
// what each received frame costs the receiving CPU: the NAPI thread of the
// box veth runs threaded on CPU 1, the generator on CPU 0, and a row's
// figure is the thread's CPU time divided by the frames it received.
// Every row is compared with the floor of its round: a hand-written XDP
// program that reads what a filter of that frame must read and drops it.
// BENCHMARKS.md, "Receiving CPU per frame", has the method.
func BenchmarkReceiveCPU(b *testing.B) {
	testenv.RequireBPF(b)
	testenv.RequireTool(b, "nft", "nftables")
	testenv.RequireTool(b, "iptables", "iptables")
	testenv.RequireTool(b, "ethtool", "ethtool")
	rb := newRcvBench(b, testenv.Veth)
	tb, box, bif, n := rb.tb, rb.tb.Box, rb.tb.BoxIface, rb.n
	row := func(prefix, frame, floor string, spoof bool, matched func() uint64) rcvRow {
		w := rcvRow{name: prefix + "/" + frame, floor: floor, frame: rb.frames[frame], gen: rb.gen(frame, spoof), matched: matched}
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
	}})
	setups = append(setups, rcvSetup{up: xdp(floorReadProg(b)), down: noXDP, rows: []rcvRow{
		row("floor-read", "invite4", "invite4", false, nil), row("floor-read", "invite6", "invite6", false, nil),
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
	const rounds = 3
	results := map[string][]rcvSample{}
	var order []string
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			for _, s := range setups {
				rb.up(s.up, s.down)
				for _, row := range s.rows {
					if only != nil && !only.MatchString(row.name) {
						continue
					}
					sm := measureRow(b, tb, row, n)
					if r == 0 {
						order = append(order, row.name)
					}
					results[row.name] = append(results[row.name], sm)
					// A meter keyed by the source never drops a frame of a
					// new source: that row's share is the figure, not a fault.
					if sm.matched >= 0 && sm.matched < 0.9 && row.name != "nft-meter/padi-spoofed" {
						b.Fatalf("%s: the rule matched only %.1f%% of %d frames", row.name, 100*sm.matched, sm.received)
					}
				}
				rb.down()
			}
		}
	}
	reportReceiveCPU(b, order, setups, results, n)
}

// measureRow floods n copies of row's frame and measures the NAPI thread.
func measureRow(b *testing.B, tb *harness.Testbed, row rcvRow, n uint32) rcvSample {
	b.Helper()
	pid := napiThread(b, tb.BoxIface, 1)
	rx0, tx0 := ethStats(b, tb.Box, tb.BoxIface), ethStats(b, tb.Peer, tb.PeerIfc)
	var m0 uint64
	if row.matched != nil {
		m0 = row.matched()
	}
	t0, c0 := threadCPU(b, pid), cpuBusy(b, 1)
	start := time.Now()
	floodPinned(b, tb.Peer, row.gen, row.frame, n, 0)
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
	s := rcvSample{secs: elapsed.Seconds(), ns: float64(t1-t0) / float64(received), busy: float64(c1-c0) / float64(received), received: received, matched: -1}
	if row.matched != nil {
		s.matched = float64(row.matched()-m0) / float64(received)
	}
	return s
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN() // a row XDPCAC_RCV_ONLY left out
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func reportReceiveCPU(b *testing.B, order []string, setups []rcvSetup, results map[string][]rcvSample, n uint32) {
	floorOf := map[string]string{}
	for _, s := range setups {
		for _, r := range s.rows {
			floorOf[r.name] = r.floor
		}
	}
	// ratio is a's ns over b's, round by round.
	ratio := func(a, c string) []float64 {
		var v []float64
		for i := range results[a] {
			if c == "" || i >= len(results[c]) { // no floor, or XDPCAC_RCV_ONLY left it out
				v = append(v, math.NaN())
				continue
			}
			v = append(v, results[a][i].ns/results[c][i].ns)
		}
		return v
	}
	fmt.Printf("\nReceiving CPU per frame: %d frames a row, NAPI thread on CPU 1, 3 rounds\n", n)
	fmt.Printf("%-32s %9s %7s %8s %9s %8s %9s %6s  %s\n", "row", "ns/frame", "Mpps", "x floor", "cpu1 ns", "matched", "received", "s", "rounds: ns/frame (x floor)")
	for _, name := range order {
		var ns, busy, match, secs, rcvd []float64
		for _, s := range results[name] {
			ns, busy, match = append(ns, s.ns), append(busy, s.busy), append(match, s.matched)
			secs, rcvd = append(secs, s.secs), append(rcvd, float64(s.received))
		}
		x := ratio(name, floorOf[name])
		m := "-"
		if match[0] >= 0 {
			m = fmt.Sprintf("%.1f%%", 100*medianOf(match))
		}
		var each []string
		for i := range ns {
			if math.IsNaN(x[i]) {
				each = append(each, fmt.Sprintf("%.0f", ns[i]))
				continue
			}
			each = append(each, fmt.Sprintf("%.0f (%.2f)", ns[i], x[i]))
		}
		xf := "-"
		if !math.IsNaN(x[0]) {
			xf = fmt.Sprintf("%.2f", medianOf(x))
		}
		fmt.Printf("%-32s %9.1f %7.2f %8s %9.1f %8s %9.0f %6.2f  %s\n", name, medianOf(ns), 1e3/medianOf(ns), xf, medianOf(busy), m,
			medianOf(rcvd), medianOf(secs), strings.Join(each, ", "))
	}
	fmt.Printf("\nTargets (median of the rounds' ratios)\n")
	target := func(what string, v []float64, op string, want float64, metric string) {
		med := medianOf(v)
		if math.IsNaN(med) {
			return
		}
		ok := med <= want
		if op == ">=" {
			ok = med >= want
		}
		verdict := "missed"
		if ok {
			verdict = "met"
		}
		fmt.Printf("%-58s %6.2f  (target %s %.2f: %s)\n", what, med, op, want, verdict)
		b.ReportMetric(med, metric)
	}
	inv := func(v []float64) []float64 {
		w := make([]float64, len(v))
		for i := range v {
			w[i] = 1 / v[i]
		}
		return w
	}
	target("rejected PADI, x floor", ratio("xdpcac-rejected/padi", "floor/padi"), "<=", 1.5, "padi-x-floor")
	target("rejected PADI, nftables limit ns / xdpcac ns", ratio("nft-limit/padi", "xdpcac-rejected/padi"), ">=", 4, "nft-x-padi")
	target("rejected PADI, nftables meter ns / xdpcac ns", ratio("nft-meter/padi", "xdpcac-rejected/padi"), ">=", 4, "meter-x-padi")
	target("rejected INVITE (IPv4), x floor", ratio("xdpcac-rejected/invite4", "floor/invite4"), "<=", 2, "invite-x-floor")
	target("rejected INVITE (IPv6), x floor", ratio("xdpcac-rejected/invite6", "floor/invite6"), "<=", 2, "invite6-x-floor")
	target("rejected INVITE, iptables string+hashlimit ns / xdpcac ns", ratio("iptables/invite4", "xdpcac-rejected/invite4"), ">=", 4, "ipt-x-invite")
	target("rejected INVITE, nftables payload+limit ns / xdpcac ns", ratio("nft-string/invite4", "xdpcac-rejected/invite4"), ">=", 4, "nft-x-invite")
	for _, f := range []string{"padi", "icrq", "invite4", "invite6"} {
		target("spoofed "+f+", rate x one source", inv(ratio("xdpcac-rejected/"+f+"-spoofed", "xdpcac-rejected/"+f)), ">=", 0.9, "spoofed-"+f)
	}
	target("other UDP through xdpcac, x empty XDP", ratio("xdpcac-open/other", "empty/other"), "<=", 1.05, "other-x-empty")
}
