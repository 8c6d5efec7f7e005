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
	fmt.Printf("%-32s %9s %7s %8s %9s %8s %9s %6s %6s %5s  %s\n", "row", "ns/frame", "Mpps", "x floor", "cpu1 ns", "matched", "received",
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
		fmt.Printf("%-32s %9.1f %7.2f %8s %9.1f %8s %9.0f %5.1f%% %6.0f %5.2f  %s\n", name, medianOf(ns), 1e3/medianOf(ns), xf, medianOf(busy), m,
			medianOf(rcvd), 100*medianOf(lost), medianOf(spin), medianOf(secs), strings.Join(each, ", "))
	}
	fmt.Printf("\nTargets, %s (median of the rounds' ratios)\n", how)
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
		b.ReportMetric(med, prefix+metric)
	}
	inv := func(v []float64) []float64 {
		w := make([]float64, len(v))
		for i := range v {
			w[i] = 1 / v[i]
		}
		return w
	}
	target("rejected PADI, x floor", ratio("xdpcac-rejected/padi", "floor/padi"), "<=", 1.5, "padi-x-floor")
	// Not targets: the least a refused PADI costs any filter that keeps
	// a limit (floorGCRAProg), and the least a filter that finds a To
	// header wherever it is reads of an INVITE (floorLinesProg), against
	// which the targets are to be read.
	least := func(what, row, metric string) {
		if v := medianOf(ratio(row, floorOf[row])); !math.IsNaN(v) {
			fmt.Printf("%-58s %6.2f  (no target: the least of it)\n", what, v)
			b.ReportMetric(v, prefix+metric)
		}
	}
	least("refused PADI of one GCRA bucket alone, x floor", "floor-gcra/padi", "gcra-x-floor")
	least("INVITE's header lines found, and nothing else, x floor", "floor-lines/invite4", "lines-x-floor")
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
