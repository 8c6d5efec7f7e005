package tests

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	. "github.com/xdpcac/xdpcac/tests/pkt"
)

// benchCase is one frame measured against the empty program.
type benchCase struct {
	slug  string // for the benchmark metric
	name  string
	prog  *ebpf.Program
	frame []byte
}

// BenchmarkFastPath measures ns per packet with BPF_PROG_TEST_RUN for an
// empty XDP_PASS program and for xdp_cac on each kind of frame, in
// interleaved rounds, and prints each as a ratio to the empty program of
// the same round (median over rounds): a noisy machine slows both alike.
// Run it with `make bench`.
func BenchmarkFastPath(b *testing.B) {
	f := newFastPath(b, false)
	empty := passProgram(b, "empty_pass")

	tcp := Frame(Ether{}, IPv4{}, TCP{Src: 40000, Dst: 443}, Raw(make([]byte, 64)))
	cases := []benchCase{
		{"empty", "empty XDP_PASS", empty, tcp},
		{"tcp", "other traffic (TCP)", f.objs.XdpCac, tcp},
		{"udp53", "other traffic (UDP 53)", f.objs.XdpCac, v4udp(53, Raw(make([]byte, 64)))},
		{"padi", "pppoe-padi", f.objs.XdpCac, Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})},
		{"icrq", "l2tp-icrq", f.objs.XdpCac, v4udp(1701, L2TP{MsgType: ICRQ})},
		{"invite", "sip-invite", f.objs.XdpCac, v4udp(5060, SIPRequest("INVITE", toNoTag))},
		{"reinvite", "sip re-INVITE", f.objs.XdpCac, v4udp(5060, SIPRequest("INVITE", toTag))},
	}
	const rounds, repeat = 15, 200_000
	ns := make([][]float64, len(cases))
	ratios := make([][]float64, len(cases))
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			var base float64
			for i, c := range cases {
				// The kernel reports whole nanoseconds per run; timing the
				// call itself resolves fractions, and one syscall spread
				// over repeat runs adds almost nothing.
				start := time.Now()
				if _, _, err := c.prog.Benchmark(c.frame, repeat, nil); err != nil {
					b.Fatal(err)
				}
				v := float64(time.Since(start).Nanoseconds()) / repeat
				if i == 0 {
					base = v
				}
				ns[i] = append(ns[i], v)
				ratios[i] = append(ratios[i], v/base)
			}
		}
	}
	fmt.Fprintf(os.Stdout, "\n%d rounds of %d runs each; medians over rounds\n", rounds, repeat)
	fmt.Fprintf(os.Stdout, "| frame | bytes | ns/packet | × empty |\n|---|---:|---:|---:|\n")
	for i, c := range cases {
		fmt.Fprintf(os.Stdout, "| %s | %d | %.1f | %.2f |\n", c.name, len(c.frame), median(ns[i]), median(ratios[i]))
		b.ReportMetric(median(ratios[i]), c.slug+"-x-empty")
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
