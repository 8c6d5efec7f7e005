package fleet_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// sentinelBed is a master, its replica and three Sentinels watching them
// as master "m", all on loopback ports of the test's own.
type sentinelBed struct {
	master, replica string
	procs           map[string]*exec.Cmd // by address
	sentinels       []string
}

// startSentinel runs a Sentinel on port watching the master at addr: it
// holds it down after a second without an answer, and two of three agree.
func startSentinel(t *testing.T, port, master string) string {
	t.Helper()
	host, mport, _ := net.SplitHostPort(master)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor m %s %s 2\nsentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 4000\n",
		port, dir, host, mport)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	runRedis(t, conf, "--sentinel")
	return "127.0.0.1:" + port
}

// newSentinelBed starts a bed whose replica reaches the master at the
// address via gives for it (nil: directly).
func newSentinelBed(t *testing.T, via func(master string) string) *sentinelBed {
	t.Helper()
	b := &sentinelBed{procs: map[string]*exec.Cmd{}}
	var cmd *exec.Cmd
	b.master, cmd = startTCPRedis(t)
	b.procs[b.master] = cmd
	upstream := b.master
	if via != nil {
		upstream = via(b.master)
	}
	host, port, _ := net.SplitHostPort(upstream)
	b.replica, cmd = startTCPRedis(t, "--replicaof", host, port)
	b.procs[b.replica] = cmd
	for range 3 {
		b.sentinels = append(b.sentinels, startSentinel(t, freePort(t), b.master))
	}
	// Ready when every Sentinel knows the replica and the two others.
	for _, s := range b.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s})
		t.Cleanup(func() { sc.Close() })
		if !testenv.Poll(30*time.Second, 100*time.Millisecond, func() bool {
			ctx := context.Background()
			r, err1 := sc.Replicas(ctx, "m").Result()
			ss, err2 := sc.Sentinels(ctx, "m").Result()
			return err1 == nil && err2 == nil && len(r) == 1 && len(ss) == 2
		}) {
			t.Fatalf("sentinel %s never saw the replica and the other two", s)
		}
	}
	return b
}

// masterAddr is the master the Sentinels name now.
func (b *sentinelBed) masterAddr(t *testing.T) string {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: b.sentinels[0]})
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(context.Background(), "m").Result()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(a[0], a[1])
}

// leaseHeld sums what every lease of the boxes holds now.
func leaseHeld(t *testing.T, boxes []*box) int64 {
	var n int64
	for _, b := range boxes {
		l, err := maps.MapLeases(b.pinned.Leases)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint32(policy.MaxLeases) {
			n += max(0, l.Tokens(i))
		}
		l.Close()
	}
	return n
}

// watchHeld reads what the boxes' leases hold every 50 ms until the
// function it returns is called, which returns the most they held at
// once: the H of the fleet's bound.
func watchHeld(t *testing.T, boxes []*box) func() int64 {
	var held int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			held = max(held, leaseHeld(t, boxes))
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return held
	}
}

// TestFleetSentinelFailover: three boxes on a master watched by three
// Sentinels, offered twice the fleet's rate (cps 100, burst 100), through
// a SENTINEL FAILOVER with wait-replicas 1 and without, and then a
// SIGKILL of the master, with the replica in step each time. Over every window of 1 s the fleet admits at most
// the stated bound (docs/design.md, "Fleet"): burst + rate + H, and a
// burst more after the kill, during which Redis is gone for the boxes
// until the Sentinels promote the replica.
func TestFleetSentinelFailover(t *testing.T) {
	testenv.RequireBPF(t)
	bed := newSentinelBed(t, nil)
	cfgOf := func(wait int) func(string, int) string {
		return func(iface string, i int) string {
			redis := fmt.Sprintf("{addresses: [%s], master-name: m, wait-replicas: %d}", strings.Join(bed.sentinels, ", "), wait)
			return fleetConfigOn(iface, "sentinel", redis, i, "local", "")
		}
	}
	boxes := startBoxesWith(t, 3, cfgOf(1))
	offered := func(int, time.Duration) float64 { return 67 }
	failover := func() {
		sc := redis.NewSentinelClient(&redis.Options{Addr: bed.sentinels[0]})
		defer sc.Close()
		if err := sc.Failover(context.Background(), "m").Err(); err != nil {
			t.Errorf("SENTINEL FAILOVER: %v", err)
		}
	}
	for _, c := range []struct {
		name   string
		wait   int
		fail   func()
		bursts float64
	}{
		// With wait-replicas the new master had every grant spent: no
		// term. Without, what it lacked (rate × lag, at most a burst).
		// A SIGKILL adds that and the burst of Redis gone under local.
		{"SENTINEL FAILOVER, wait-replicas 1", 1, failover, 1},
		{"SENTINEL FAILOVER", 0, failover, 2},
		{"master SIGKILL", 0, func() {
			// The master is whichever the Sentinels name now.
			if p := bed.procs[bed.masterAddr(t)]; p != nil {
				p.Process.Signal(syscall.SIGKILL)
			} else {
				t.Errorf("the Sentinels name a master %s the test did not start", bed.masterAddr(t))
			}
		}, 3},
	} {
		for i, b := range boxes {
			if err := os.WriteFile(b.cfg, []byte(cfgOf(c.wait)(b.tb.BoxIface, i)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := b.d.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Second) // renewals on the master in force
		before := bed.masterAddr(t)
		shown, err := api.Dial(boxes[0].tb.State).Fleet()
		if err != nil || shown.Master != before {
			t.Errorf("%s: show fleet names the master %q (%v), the Sentinels %s", c.name, shown.Master, err, before)
		}
		s := sample(t, boxes)
		mostHeld := watchHeld(t, boxes)
		failed := make(chan struct{})
		go func() {
			defer close(failed)
			time.Sleep(3 * time.Second)
			c.fail()
		}()
		const d = 12 * time.Second
		fleetRun(t, boxes, d, offered)
		s.end()
		held := mostHeld()
		<-failed
		after := bed.masterAddr(t)
		// show fleet names the new master, and counts the failover.
		var now api.Fleet
		if !testenv.Poll(3*time.Second, 100*time.Millisecond, func() bool {
			now, err = api.Dial(boxes[0].tb.State).Fleet()
			return err == nil && now.Master == after && now.Failovers == shown.Failovers+1
		}) {
			t.Errorf("%s: show fleet names the master %q after %d failovers (%v), want %s after %d", c.name, now.Master, now.Failovers, err, after, shown.Failovers+1)
		}
		most := func(w time.Duration) float64 {
			m := 0.0
			for at := time.Duration(0); at+w <= d; at += 100 * time.Millisecond {
				m = max(m, s.rate(at, at+w, all)*w.Seconds())
			}
			return m
		}
		for _, w := range []time.Duration{time.Second, 5 * time.Second} {
			bound := c.bursts*100 + 100*w.Seconds() + float64(held)
			got := most(w)
			t.Logf("%s: master %s, then %s; the most in any %v %.0f, bound %.0f (H = %d)", c.name, before, after, w, got, bound, held)
			if got > bound {
				t.Errorf("%s: %.0f admitted in %v, over the bound %.0f", c.name, got, w, bound)
			}
		}
		t.Logf("%s: %.1f calls/s over the %v", c.name, s.rate(0, d, all), d)
		if after == before {
			t.Errorf("%s: the Sentinels still name %s", c.name, before)
		}
	}
}
