package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN() // a row XDPCAC_RCV_ONLY left out
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// reportReceiveCPU prints one table of BenchmarkReceiveCPU and its
// targets, the flat-out or the paced one (how names it), and
// reports each target's figure as a metric named with prefix.
func reportReceiveCPU(b *testing.B, how, prefix string, order []string, setups []rcvSetup, results map[string][]rcvSample, n uint32) {
	ratio := receiveTable(how, order, setups, results, n)
	target, note := receiveTargets(b, how, prefix)
	// The least a refused PADI or ICRQ costs any filter that keeps a
	// limit (floorGCRAProg), and a filter that finds a To header wherever
	// it is of an INVITE (floorLinesProg).
	note("refused PADI of one GCRA bucket alone, x floor", ratio("floor-gcra/padi", "floor/padi"), "gcra-x-floor", "the least of it")
	note("refused ICRQ of one GCRA bucket alone, x floor", ratio("floor-gcra/icrq", "floor/icrq"), "gcra-icrq-x-floor", "the least of it")
	note("INVITE's header lines found, and nothing else, x floor", ratio("floor-lines/invite4", "floor/invite4"), "lines-x-floor", "the least of it")

	target("refused PADI, x a bare limit (floor-gcra)", ratio("xdpcac-rejected/padi", "floor-gcra/padi"), "<=", 1.5, "padi-x-gcra")
	target("refused PADI, nftables limit ns / xdpcac ns", ratio("nft-limit/padi", "xdpcac-rejected/padi"), ">=", 4, "nft-x-padi")
	target("refused PADI, nftables meter ns / xdpcac ns", ratio("nft-meter/padi", "xdpcac-rejected/padi"), ">=", 4, "meter-x-padi")
	target("refused ICRQ, x a bare limit (floor-gcra)", ratio("xdpcac-rejected/icrq", "floor-gcra/icrq"), "<=", 1.5, "icrq-x-gcra")
	// INVITEs are new calls, one each frame, as a flood sends them.
	for _, sp := range []string{"", "-spoofed"} {
		x := "xdpcac-rejected/invite4" + sp
		what := "new-call INVITE" + strings.ReplaceAll(sp, "-", ", ")
		target(what+", x floor-lines", ratio(x, "floor-lines/invite4"+sp), "<=", 1.5, "invite"+sp+"-x-lines")
		target(what+", nftables payload+limit ns / xdpcac ns", ratio("nft-string/invite4"+sp, x), ">=", 2, "nft-x-invite"+sp)
		target(what+", iptables string+hashlimit ns / xdpcac ns", ratio("iptables/invite4"+sp, x), ">=", 2, "ipt-x-invite"+sp)
	}
	note("new-call INVITE over IPv6, x floor-lines", ratio("xdpcac-rejected/invite6", "floor-lines/invite6"), "invite6-x-lines", "IPv4's is the target")
	note("INVITE retransmitted (copies of one), x floor", ratio("xdpcac-rejected/invite4-retransmission", "floor/invite4-retransmission"),
		"retransmission-x-floor", "what the rows before the new calls measured")
	target("worst INVITE / typical (xdpcac-rejected/invite4)", ratio("xdpcac-rejected/worst", "xdpcac-rejected/invite4"), "<=", 3, "worst-x-invite")
	note("worst INVITE, x floor-lines", ratio("xdpcac-rejected/worst", "floor-lines/worst"), "worst-x-lines", "its read of every line")
	note("INVITE with SDP, x floor-lines", ratio("xdpcac-rejected/invite-sdp", "floor-lines/invite-sdp"), "sdp-x-lines", "a softphone's")
	target("other UDP through xdpcac, x empty XDP", ratio("xdpcac-open/other", "empty/other"), "<=", 1.05, "other-x-empty")
	// Spoofed against one source: xdpcac's rate when spoofed over its rate
	// from one source, divided by the same ratio of the floor. Writing a
	// new source into each frame makes any receiver that reads it wait for
	// that cache line from the generator's CPU, which a NIC's DMA does not
	// (BENCHMARKS.md, "The spoofed rows, found"); dividing by the floor's
	// ratio takes that out. 1 means spoofing costs xdpcac no more than it
	// costs the floor.
	for _, f := range []string{"padi", "icrq", "invite4", "invite6"} {
		x, fl := ratio("xdpcac-rejected/"+f+"-spoofed", "xdpcac-rejected/"+f), ratio("floor/"+f+"-spoofed", "floor/"+f)
		v := make([]float64, len(x))
		for i := range x {
			v[i] = math.NaN()
			if i < len(fl) {
				v[i] = fl[i] / x[i]
			}
		}
		target("spoofed "+f+", rate x one source, over the floor's", v, ">=", 0.9, "spoofed-"+f)
	}
}

// receiveTable prints the table of one way of measuring (how) the rows
// in order, and returns the ratio of two rows' ns, round by round.
func receiveTable(how string, order []string, setups []rcvSetup, results map[string][]rcvSample, n uint32) func(a, c string) []float64 {
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
	fmt.Printf("\nReceiving CPU per frame, %s: %d frames a row, NAPI thread on CPU 1, 3 rounds\n", how, n)
	fmt.Printf("%-38s %9s %7s %8s %9s %8s %9s %6s %6s %5s  %s\n", "row", "ns/frame", "Mpps", "x floor", "cpu1 ns", "matched", "received",
		"lost", "spin", "s", "rounds: ns/frame (x floor)")
	for _, name := range order {
		var ns, busy, match, secs, rcvd, lost, spin []float64
		for _, s := range results[name] {
			ns, busy, match = append(ns, s.ns), append(busy, s.busy), append(match, s.matched)
			secs, rcvd = append(secs, s.secs), append(rcvd, float64(s.received))
			lost, spin = append(lost, s.lost), append(spin, float64(s.spin))
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
		fmt.Printf("%-38s %9.1f %7.2f %8s %9.1f %8s %9.0f %5.1f%% %6.0f %5.2f  %s\n", name, medianOf(ns), 1e3/medianOf(ns), xf, medianOf(busy), m,
			medianOf(rcvd), 100*medianOf(lost), medianOf(spin), medianOf(secs), strings.Join(each, ", "))
	}
	return ratio
}

// receiveTargets prints the heading of the targets of one way of
// measuring (how) and returns what prints a target's figure, and a
// figure with no target, each reported as a metric named with prefix.
func receiveTargets(b *testing.B, how, prefix string) (target func(what string, v []float64, op string, want float64, metric string), note func(what string, v []float64, metric, why string)) {
	fmt.Printf("\nTargets, %s (median of the rounds' ratios)\n", how)
	target = func(what string, v []float64, op string, want float64, metric string) {
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
		fmt.Printf("%-66s %6.2f  (target %s %.2f: %s)\n", what, med, op, want, verdict)
		b.ReportMetric(med, prefix+metric)
	}
	// Not targets: what the rows below are to be read against, and the
	// rows of frames no target names.
	note = func(what string, v []float64, metric, why string) {
		if med := medianOf(v); !math.IsNaN(med) {
			fmt.Printf("%-66s %6.2f  (no target: %s)\n", what, med, why)
			b.ReportMetric(med, prefix+metric)
		}
	}
	return target, note
}
