package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
)

// stormLines are n records as a storm of n sources leaves them, one a
// source and second.
func stormLines(n int) []api.RejectLine {
	now := time.Now()
	out := make([]api.RejectLine, n)
	for i := range out {
		out[i] = api.RejectLine{
			Time: now, First: now.Add(-time.Second), Interface: "eth0", Class: "sip-invite",
			Source: fmt.Sprintf("198.51.%d.%d", i>>8&0xff, i&0xff), Reason: "source-rate", Count: uint64(i%50 + 1),
		}
	}
	return out
}

// stormSweep is how many records one sweep hands the journal: a storm of
// many sources fills a second's records at once.
const stormSweep = 10_000

// BenchmarkJournalStorm writes a storm's records through the journal, a
// sweep's worth at a time as the sweeps do, while a reader asks for them
// as `show rejects` does every 5 ms. It reports the journal's wall time
// as a ratio to encoding the same records to a buffer (the least any log
// of them costs, measured in the same run), the CPU the process spent a
// record, and the longest a reader waited (docs/design.md, "Reject
// records"). BENCHMARKS.md, "The rejects journal in a storm".
func BenchmarkJournalStorm(b *testing.B) {
	const n = 100_000
	lines := stormLines(n)
	for range b.N {
		floor := timed(func() {
			w := bufio.NewWriter(io.Discard)
			enc := json.NewEncoder(w)
			for _, l := range lines {
				_ = enc.Encode(l)
			}
			_ = w.Flush()
		})
		path := filepath.Join(b.TempDir(), "rejects.log")
		j := newJournal(b.TempDir(), newRejectsFile(path, Rotation{}, slog.New(slog.DiscardHandler)), slog.New(slog.DiscardHandler))
		if err := j.reopen(); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		var waits []time.Duration
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				waits = append(waits, timed(func() { _ = j.answer(nil) }))
			}
		}()
		cpu0 := cpuTime()
		took := timed(func() {
			for i := 0; i < n; i += stormSweep {
				stormAdd(j, lines[i:min(i+stormSweep, n)])
			}
		})
		cpu := cpuTime() - cpu0
		close(stop)
		wg.Wait()
		j.close()
		slices.Sort(waits)
		b.ReportMetric(float64(took)/float64(floor), "x-encode")
		b.ReportMetric(float64(n)/took.Seconds(), "records/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/record")
		if len(waits) > 0 {
			b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "show-max-ms")
			b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "show-p99-ms")
		}
	}
}

// stormAdd hands the journal one sweep's records, as a sweep does.
func stormAdd(j *journal, lines []api.RejectLine) { j.addAll(lines) }

func timed(fn func()) time.Duration {
	t0 := time.Now()
	fn()
	return time.Since(t0)
}

// cpuTime is the user and system CPU the process has spent.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
