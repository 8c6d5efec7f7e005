package bench

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// BenchmarkFastPathDeniedCPUs runs xdp_cac with a deny table of two
// denied sources on both CPUs at once, BPF_PROG_TEST_RUN pinned to each:
// OPTIONS from one source on both (a flood whose ports the NIC spreads
// over its queues), against the same from a source of each CPU's own,
// which share no entry, in the same rounds; and on one CPU alone. What
// each denied frame writes of its source's entry is what tells the first
// from the second (bpf/access.h, deny_frame). BENCHMARKS.md, "One denied
// source on two CPUs", has the figures.
func BenchmarkFastPathDeniedCPUs(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("one CPU")
	}
	_, auto, _ := deniedAccess(netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("192.0.2.0/24"))
	o := deniedObjects(b, deniedPolicy(b), auto)
	from := func(src string) []byte {
		v4 := IPv4{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr("203.0.113.1"), ID: ipv4ID}
		return Frame(Ether{}, v4, UDP{Src: 5060, Dst: 5060}, SIPRequest("OPTIONS", harness.ToNoTag))
	}
	one, other := from("198.51.100.1"), from("198.51.100.2")
	const runs = 2_000_000
	// run times frames[i] on CPU i, all at once; its figure is the mean
	// of the CPUs' ns a run.
	run := func(frames ...[]byte) float64 {
		var wg sync.WaitGroup
		ns := make([]float64, len(frames))
		for i, frame := range frames {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var set unix.CPUSet
				set.Set(i)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					b.Error(err)
					return
				}
				_, d, err := o.XdpCac.Benchmark(frame, runs, nil)
				if err != nil {
					b.Error(err)
				}
				ns[i] = float64(d.Nanoseconds())
			}()
		}
		wg.Wait()
		var sum float64
		for _, v := range ns {
			sum += v
		}
		return sum / float64(len(ns))
	}
	const rounds = 9
	var alone, same, apart []float64
	for b.Loop() {
		for range rounds {
			alone = append(alone, run(one))
			same = append(same, run(one, one))
			apart = append(apart, run(one, other))
		}
	}
	fmt.Printf("\nOne denied source on two CPUs: OPTIONS, BPF_PROG_TEST_RUN, %d runs a CPU, %d rounds, medians\n", runs, rounds)
	fmt.Printf("%-44s %8s %12s\n", "", "ns a run", "x apart")
	for _, r := range []struct {
		what string
		v    []float64
	}{{"one CPU", alone}, {"two CPUs, one source", same}, {"two CPUs, a source each (apart)", apart}} {
		fmt.Printf("%-44s %8.1f %12.2f\n", r.what, medianOf(r.v), medianOf(r.v)/medianOf(apart))
	}
	b.ReportMetric(medianOf(same)/medianOf(apart), "same-x-apart")
	b.ReportMetric(medianOf(alone)/medianOf(apart), "alone-x-apart")
}
