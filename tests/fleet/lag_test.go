package fleet_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// lagProxy stands between a master and its replica and hands the
// replication stream on delay late: the replica is that far behind, and
// what it has not been handed when the master dies is lost with it, as
// with a replica on a slow or congested link. Its answers (REPLCONF ACK)
// go up at once.
type lagProxy struct {
	l     net.Listener
	delay time.Duration
}

func startLagProxy(t *testing.T, master string, delay time.Duration) *lagProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lagProxy{l: l, delay: delay}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", master)
			if err != nil {
				down.Close()
				continue
			}
			go p.serve(up, down)
		}
	}()
	return p
}

// serve relays one replication connection until either side closes it;
// a master gone takes what was not handed on yet with it.
func (p *lagProxy) serve(up, down net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { up.Close(); down.Close() }) }
	defer closeBoth()
	go func() {
		io.Copy(up, down)
		closeBoth()
	}()
	type chunk struct {
		b  []byte
		at time.Time
	}
	q := make(chan chunk, 1<<16)
	go func() {
		for c := range q {
			time.Sleep(time.Until(c.at.Add(p.delay)))
			if _, err := down.Write(c.b); err != nil {
				closeBoth()
				return
			}
		}
	}()
	defer close(q)
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			q <- chunk{append([]byte(nil), buf[:n]...), time.Now()}
		}
		if err != nil {
			return // the master is gone: down is closed with what is queued
		}
	}
}

// TestFleetSentinelLaggingReplica: the bed of TestFleetSentinelFailover
// with its replica 2 s behind the master, which is SIGKILLed under twice
// the rate. Without wait-replicas the promoted replica lacks the last 2 s
// of grants, at most a burst, and the fleet stays within the bound with
// that burst; with wait-replicas 1 no grant is spent before the replica
// has it, so none is lost, and the boxes, whose grants the lagging
// replica cannot acknowledge in time, run on on-fleet-lost local instead.
func TestFleetSentinelLaggingReplica(t *testing.T) {
	testenv.RequireBPF(t)
	for _, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("wait-replicas %d", wait), func(t *testing.T) {
			bed := newSentinelBed(t, func(master string) string {
				return startLagProxy(t, master, 2*time.Second).l.Addr().String()
			})
			boxes := startBoxesWith(t, 3, func(iface string, i int) string {
				redis := fmt.Sprintf("{addresses: [%s], master-name: m, wait-replicas: %d}", strings.Join(bed.sentinels, ", "), wait)
				return fleetConfigOn(iface, "lag", redis, i, "local", "")
			})
			time.Sleep(3 * time.Second)
			before := bed.masterAddr(t)
			s := sample(t, boxes)
			killed := make(chan struct{})
			go func() {
				defer close(killed)
				time.Sleep(4 * time.Second)
				bed.procs[before].Process.Signal(syscall.SIGKILL)
			}()
			const d = 14 * time.Second
			fleetRun(t, boxes, d, func(int, time.Duration) float64 { return 67 })
			s.end()
			<-killed
			after := bed.masterAddr(t)
			var most float64
			for at := time.Duration(0); at+5*time.Second <= d; at += 100 * time.Millisecond {
				most = max(most, s.rate(at, at+5*time.Second, all)*5)
			}
			// burst + rate × 5, the lost Redis's burst (local), and
			// without wait-replicas the grants the replica lacked; H, the
			// leases held, is some 30 at this load.
			bound := 100 + 500 + 100 + 30.0
			if wait == 0 {
				bound += 100
			}
			t.Logf("wait-replicas %d: master %s, then %s; the most in any 5 s %.0f, bound %.0f; %.1f calls/s over the %v",
				wait, before, after, most, bound, s.rate(0, d, all), d)
			if after == before {
				t.Errorf("the Sentinels still name %s", before)
			}
			if most > bound {
				t.Errorf("%.0f admitted in 5 s, over the bound %.0f", most, bound)
			}
		})
	}
}
