package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// BenchmarkSourceTable reports what a tracked source and a dialog of the
// dialog table cost in memory (both tables preallocated, so the charge is
// the table's size whatever it holds), and
// what an admitted PADI costs with 1,048,576 sources tracked against the
// same PADI with one source tracked, in the same run.
func BenchmarkSourceTable(b *testing.B) {
	testenv.RequireBPF(b)
	const tracked = 1 << 20
	load := func(fill int) (*bpf.XdpObjects, []byte) {
		spec, err := bpf.LoadXdp()
		if err != nil {
			b.Fatal(err)
		}
		spec.Maps[bpf.XdpMapSources].MaxEntries = tracked
		if err := maps.SizeDialogs(spec, tracked); err != nil {
			b.Fatal(err)
		}
		var objs bpf.XdpObjects
		if err := spec.LoadAndAssign(&objs, nil); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { objs.Close() })
		var p policy.Policy
		// A per-source bucket that never runs dry, keyed by MAC and VLANs.
		p.PerSource[cac.PPPoEPADI] = policy.PerSource{Limit: harness.MustRate(b, 1e9, 1e9), Key: policy.SourceMACVLAN}
		if err := maps.WritePolicy(maps.PolicyMapsOf(&objs.XdpMaps), p); err != nil {
			b.Fatal(err)
		}
		keys := make([]bpf.XdpCacSource, fill)
		vals := make([]bpf.XdpCacBucket, fill)
		for i := range keys {
			keys[i].Class = uint8(cac.PPPoEPADI)
			copy(keys[i].Addr[:6], []byte{2, 0, 0x5e, byte(i >> 16), byte(i >> 8), byte(i)})
			keys[i].Vlan[0] = 100
		}
		if fill > 0 {
			if _, err := objs.Sources.BatchUpdate(keys, vals, nil); err != nil {
				b.Fatal(err)
			}
		}
		// The measured PADI comes from a source in the middle of the table.
		src := [6]byte{2, 0, 0x5e, 0, 0x80, 0}
		return &objs, Frame(Ether{Src: src, Broadcast: true}, VLAN{ID: 100}, PPPoE{Code: PADI})
	}
	one, frame := load(0)
	full, _ := load(tracked)

	const rounds, repeat = 9, 200_000
	var ratios []float64
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			var ns [2]float64
			for i, o := range []*bpf.XdpObjects{one, full} {
				start := time.Now()
				if _, _, err := o.XdpCac.Benchmark(frame, repeat, nil); err != nil {
					b.Fatal(err)
				}
				ns[i] = float64(time.Since(start).Nanoseconds()) / repeat
			}
			ratios = append(ratios, ns[1]/ns[0])
		}
	}
	mem := memlock(b, full.Sources)
	fmt.Fprintf(os.Stdout, "\nper-source table of %d sources: %d bytes locked, %.1f bytes per source\n", tracked, mem, float64(mem)/tracked)
	fmt.Fprintf(os.Stdout, "admitted PADI with %d sources tracked vs one: %.2f× (median of %d rounds)\n", tracked, median(ratios), rounds)
	dialogs := memlock(b, full.Dialogs)
	fmt.Fprintf(os.Stdout, "dialog table of %d dialogs: %d bytes locked, %.1f bytes per dialog\n", tracked, dialogs, float64(dialogs)/tracked)
	b.ReportMetric(float64(mem)/tracked, "bytes/source")
	b.ReportMetric(float64(dialogs)/tracked, "bytes/dialog")
	b.ReportMetric(median(ratios), "full-x-one")
}

// memlock reads the kernel's memory charge of a map.
func memlock(b *testing.B, m *ebpf.Map) uint64 {
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", m.FD()))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "memlock:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no memlock in fdinfo")
	return 0
}
