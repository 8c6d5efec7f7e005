package fleet_test

import (
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// pause stops the server with SIGSTOP: it keeps its socket and takes
// connections, and answers nothing, as a Redis swapping or stuck in a
// fork does. resume lets it go on.
func (r *redisServer) pause()  { r.cmd.Process.Signal(syscall.SIGSTOP) }
func (r *redisServer) resume() { r.cmd.Process.Signal(syscall.SIGCONT) }

// timed is how long fn took.
func timed(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// TestFleetRedisHung: Redis SIGSTOPped for 20 s under load, for each
// on-fleet-lost. A renewal never waits past its deadline, so the policy
// is in force within lost-after (2 s) and half a second; while Redis is
// unreachable only a PING waits on it, so the fleet is back within two
// renewals of SIGCONT; show fleet and a scrape, which read the keeper and
// never Redis, answer at once during the hang. Before, the renewals
// waited out go-redis's own timeouts (5 s each) holding the lock show
// fleet and the scrapes wanted.
func TestFleetRedisHung(t *testing.T) {
	testenv.RequireBPF(t)
	r := newRedis(t)
	const n = 3
	metrics := "metrics: {listen: \"127.0.0.1:0\"}\n"
	boxes := startBoxesWith(t, n, func(iface string, i int) string { return fleetConfig(iface, r.sock, i, "local", metrics) })
	t.Cleanup(r.resume) // a failed test must not leave it stopped
	const d, pauseAt, resumeAt = 24 * time.Second, 2 * time.Second, 22 * time.Second
	for _, onLost := range []string{"local", "static", "closed"} {
		for i, b := range boxes {
			if err := os.WriteFile(b.cfg, []byte(fleetConfig(b.tb.BoxIface, r.sock, i, onLost, metrics)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := b.d.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second) // the new keepers
		st, err := api.Dial(boxes[0].tb.State).Status()
		if err != nil {
			t.Fatal(err)
		}
		var paused, resumed time.Time
		var showFleet, scrape time.Duration
		hang := make(chan struct{})
		go func() {
			defer close(hang)
			time.Sleep(pauseAt)
			paused = time.Now()
			r.pause()
			time.Sleep(3 * time.Second) // into the hang, past lost-after
			showFleet = timed(func() {
				if _, err := api.Dial(boxes[0].tb.State).Fleet(); err != nil {
					t.Errorf("%s: show fleet during the hang: %v", onLost, err)
				}
			})
			scrape = timed(func() {
				resp, err := http.Get("http://" + st.Metrics + "/metrics")
				if err != nil {
					t.Errorf("%s: a scrape during the hang: %v", onLost, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
			time.Sleep(time.Until(paused.Add(resumeAt - pauseAt)))
			resumed = time.Now()
			r.resume()
		}()
		fleetRun(t, boxes, d, func(int, time.Duration) float64 { return 60 })
		<-hang
		var inForce, back time.Duration
		for i, b := range boxes {
			log := b.d.Log.String()
			at, ok := stateAt(log, "lost", paused)
			if !ok {
				t.Errorf("%s: box %d never said its fleet is lost:\n%s", onLost, i, lastLines(log, 10))
				continue
			}
			inForce = max(inForce, at.Sub(paused))
			at, ok = stateAt(log, "fleet", resumed)
			if !ok {
				t.Errorf("%s: box %d never came back to the fleet:\n%s", onLost, i, lastLines(log, 10))
				continue
			}
			back = max(back, at.Sub(resumed))
		}
		t.Logf("on-fleet-lost %s, Redis SIGSTOPped: in force on every box %v after, show fleet %v and a scrape %v during the hang, back to the fleet %v after SIGCONT",
			onLost, inForce.Round(time.Millisecond), showFleet.Round(time.Microsecond), scrape.Round(time.Microsecond), back.Round(time.Millisecond))
		if inForce > 2*time.Second+500*time.Millisecond {
			t.Errorf("%s: in force %v after Redis hung, want within lost-after (2 s) and half a second", onLost, inForce)
		}
		// A renewal is drawn 50 to 150 ms after the last: back within
		// two of them, where renewals that had piled up in Redis during
		// the hang held it for up to 0.6 s.
		if back > 300*time.Millisecond {
			t.Errorf("%s: back to the fleet %v after SIGCONT, want within two renewals (300 ms)", onLost, back)
		}
		// Bounds far above what they take (a few ms) and far below the
		// seconds they waited on Redis before.
		if showFleet > time.Second || scrape > time.Second {
			t.Errorf("%s: during the hang show fleet took %v and a scrape %v: they waited on Redis", onLost, showFleet, scrape)
		}
	}
}

// TestFleetRestartedInOutage: ten boxes restarted together while Redis is
// down, with on-fleet-lost local, admit the fleet's rate between them:
// each daemon divides it by the boxes its fleet last counted, which the
// daemon before it kept. Knowing nothing, each took the whole fleet's
// rate, and the ten admitted ten times it.
func TestFleetRestartedInOutage(t *testing.T) {
	testenv.RequireBPF(t)
	r := newRedis(t)
	const n = 10
	boxes := startBoxes(t, n, r.sock, "local")
	// Counted: every box renews, and each keeps the fleet's ten.
	fleetRun(t, boxes, 3*time.Second, func(int, time.Duration) float64 { return 20 })
	if f, err := api.Dial(boxes[0].tb.State).Fleet(); err != nil || f.Members != n {
		t.Fatalf("before the outage the fleet counts %d boxes (%v), want %d", f.Members, err, n)
	}
	r.stop()
	for _, b := range boxes {
		b.d.Stop()
		b.d = b.tb.StartDaemon(t, b.cfg)
	}
	if f, err := api.Dial(boxes[0].tb.State).Fleet(); err != nil || f.Members != n {
		t.Errorf("restarted in the outage, the box counts %d boxes (%v), want the %d it kept", f.Members, err, n)
	}
	// 50 a second offered to each, five times the fleet's rate in all.
	const d = 8 * time.Second
	s := sample(t, boxes)
	fleetRun(t, boxes, d, func(int, time.Duration) float64 { return 50 })
	s.end()
	rate := s.rate(3*time.Second, d, all) // past lost-after (2 s)
	t.Logf("ten boxes restarted in an outage admitted %.1f calls/s between them (the fleet's rate is 100)", rate)
	if rate < 80 || rate > 130 {
		t.Errorf("ten boxes restarted in an outage admitted %.1f calls/s, want about the fleet's 100", rate)
	}
}

// TestFleetDaemonStopped: a box's daemon SIGSTOPped while its lease holds
// tokens: once the lifetime of its last grant (1 s) has passed, a flood
// admits nothing on that box however many tokens the lease still holds,
// and after SIGCONT it admits again. Before, the fast path spent a stopped
// daemon's lease for as long as it was stopped.
func TestFleetDaemonStopped(t *testing.T) {
	testenv.RequireBPF(t)
	r := newRedis(t)
	boxes := startBoxes(t, 1, r.sock, "local")
	b := boxes[0]
	// A steady load sizes the lease; the daemon stops just after it ends.
	fleetRun(t, boxes, 2*time.Second, func(int, time.Duration) float64 { return 80 })
	if err := b.d.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.d.Signal(syscall.SIGCONT) })
	time.Sleep(1500 * time.Millisecond) // past the last grant's lifetime
	stopped := fleetRun(t, boxes, time.Second, func(int, time.Duration) float64 { return 500 })
	if err := b.d.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a few renewals
	running := fleetRun(t, boxes, time.Second, func(int, time.Duration) float64 { return 500 })
	t.Logf("a flood of 500 calls admitted %d while the daemon was stopped past its lease's lifetime, %d once it ran again", stopped, running)
	if stopped != 0 {
		t.Errorf("%d calls admitted on a lease no daemon renewed past its lifetime, want none", stopped)
	}
	if running < 50 {
		t.Errorf("%d calls admitted once the daemon ran again, want about the rate (100)", running)
	}
}
