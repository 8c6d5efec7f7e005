//go:build journalstorm

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// procCPU is the CPU a process has spent, from /proc/PID/stat, in clock
// ticks (utime + stime).
func procCPU(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, the 12th and 13th after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// asks are show rejects's answer times: the daemon's own (its
// Server-Timing), the round trip to the answer's last byte, and that with
// the records decoded as the CLI decodes them.
type asks struct {
	mu                    sync.Mutex
	daemon, trip, decoded []time.Duration
}

// showRejects asks the daemon for its reject records every 100 ms until
// stop, as show rejects does.
func showRejects(t *testing.T, state string, stop <-chan struct{}) *asks {
	socket := api.PathsOf(state).Socket
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}
	a := &asks{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			t0 := time.Now()
			resp, err := client.Get("http://xdpcac" + api.PathRejects)
			if err != nil {
				t.Errorf("show rejects: %v", err)
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			trip := time.Since(t0)
			var lines []api.RejectLine
			if err == nil {
				err = json.Unmarshal(body, &lines)
			}
			decoded := time.Since(t0)
			a.mu.Lock()
			// A daemon of a version before Server-Timing gives none.
			var ms float64
			if _, err := fmt.Sscanf(resp.Header.Get("Server-Timing"), "answer;dur=%g", &ms); err == nil {
				a.daemon = append(a.daemon, time.Duration(ms*float64(time.Millisecond)))
			}
			a.trip, a.decoded = append(a.trip, trip), append(a.decoded, decoded)
			a.mu.Unlock()
		}
	}()
	t.Cleanup(wg.Wait)
	return a
}

// summary is p50 and max of each of the three.
func (a *asks) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("daemon p50 %v max %v; to the last byte p50 %v max %v; decoded p50 %v max %v (%d asks)",
		quantile(a.daemon, 0.5), quantile(a.daemon, 1), quantile(a.trip, 0.5), quantile(a.trip, 1),
		quantile(a.decoded, 0.5), quantile(a.decoded, 1), len(a.trip))
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// TestJournalStormLive is `make bench-journal` (BENCHMARKS.md, "The
// rejects journal in a storm"): 100,000 PADIs from 25,000 modems in 5 s,
// each refused by its per-source bucket, through a daemon whose journal
// writes every record. It logs, and asserts nothing of time: the
// daemon's CPU during the storm against the same time idle before it,
// the records written a second, and show rejects's answer time during
// the storm against its time idle, all measured in this run.
func TestJournalStormLive(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"cpu: {sample-interval: 200ms}\n"+
		"classes:\n  pppoe-padi: {cps: 0.001, burst: 1, per-source: {key: mac, cps: 0.001, burst: 1}}\n"))
	const frames, modems, window = 100_000, 25_000, 5 * time.Second
	batch := make([][]byte, modems)
	for i := range batch {
		batch[i] = pkt.Frame(pkt.Ether{Broadcast: true, Src: [6]byte{0x02, 0x00, 0x5e, byte(i >> 16), byte(i >> 8), byte(i)}}, pkt.PPPoE{Code: pkt.PADI})
	}
	tick := time.Duration(float64(time.Second) / float64(pidTicks()))

	idleStop := make(chan struct{})
	idle := showRejects(t, tb.State, idleStop)
	cpu0 := procCPU(t, d.Pid())
	time.Sleep(window) // the baseline: the same daemon, idle, as long as the storm
	idleCPU := time.Duration(procCPU(t, d.Pid())-cpu0) * tick
	close(idleStop)

	stormStop := make(chan struct{})
	during := showRejects(t, tb.State, stormStop)
	lines0 := countLogLines(t, d.RejectsLog)
	cpu0 = procCPU(t, d.Pid())
	start := time.Now()
	// Paced in small batches, as a storm from elsewhere comes: the
	// sender shares this machine's CPUs with the daemon and the asks.
	const step = 1000
	for sent := 0; sent < frames; sent += step {
		testenv.Send(t, tb.Peer, tb.PeerIfc, batch[sent%modems:sent%modems+step])
		time.Sleep(time.Until(start.Add(window * time.Duration(sent+step) / frames)))
	}
	time.Sleep(3 * time.Second) // the last seconds' records are swept 2 s after their end
	stormCPU := time.Duration(procCPU(t, d.Pid())-cpu0) * tick
	elapsed := time.Since(start)
	close(stormStop)
	written := countLogLines(t, d.RejectsLog) - lines0

	t.Logf("daemon CPU: %v in %v of storm (%.1f%% of a CPU), %v in as long idle: %.1fx",
		stormCPU, elapsed.Round(time.Millisecond), 100*stormCPU.Seconds()/elapsed.Seconds(), idleCPU,
		stormCPU.Seconds()/max(idleCPU.Seconds(), tick.Seconds()))
	t.Logf("records written: %d, %.0f a second", written, float64(written)/elapsed.Seconds())
	t.Logf("show rejects idle: %s", idle.summary())
	t.Logf("show rejects during the storm: %s", during.summary())
}

func countLogLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// pidTicks is the kernel's clock ticks a second (USER_HZ), which Linux
// fixes at 100 for /proc on every architecture.
func pidTicks() int { return 100 }
