//go:build soak

package bench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/internal/storm"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// soakTable is the per-source table the soak configures: small, so that
// the storms fill it many times over.
const soakTable = 4096

// soakConfig is the soak's file; burst is what each apply changes.
func soakConfig(tb *harness.Testbed, burst int) string {
	return harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\ncpu: {sample-interval: 500ms}\n" +
		"per-source-table: " + harness.Itoa(soakTable) + "\n" +
		"classes:\n  pppoe-padi: {cps: 200, burst: " + harness.Itoa(burst) + ", per-source: {key: mac, cps: 1, burst: 2}}\n" +
		"  l2tp-icrq: {cps: 100, burst: " + harness.Itoa(burst) + "}\n" +
		"  sip-invite: {cps: 100, burst: " + harness.Itoa(burst) + ", per-source: {cps: 1, burst: 2}}\n" +
		harness.Ios("new-model", "limit 300", "cpu-limit 95", "pppoe 1 1", "vpdn 1 1")
}

// soakFrames are PADIs from 20,000 modems on 100 VLANs, ICRQs, and
// INVITEs from 600 addresses in three documentation /24s, interleaved and
// built once, so that the sender spends its time sending.
func soakFrames() [][]byte {
	bras := netip.MustParseAddr("192.0.2.1")
	padi := storm.PADIStorm(20000, 100, 200)
	icrq := storm.L2TPFlood(pkt.ICRQ, netip.MustParseAddr("198.51.100.1"), bras)
	var invites []func(int) []byte
	for _, first := range []string{"203.0.113.1", "198.51.100.10", "192.0.2.10"} {
		invites = append(invites, storm.SIPFlood("INVITE", netip.MustParseAddr(first), 200, bras))
	}
	var frames [][]byte
	for i := range 6000 { // a multiple of 3: frame i is of class i%3
		switch j := i / 3; i % 3 {
		case 0:
			frames = append(frames, padi(j))
		case 1:
			frames = append(frames, icrq(j))
		case 2:
			frames = append(frames, invites[j%3](j/3))
		}
	}
	return frames
}

// rssKB is a process's resident set, from /proc.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb
		}
	}
	t.Fatalf("no VmRSS for %d", pid)
	return 0
}

// TestSoak floods PADI, ICRQ and INVITE as fast as this machine sends
// them for XDPCAC_SOAK (default 10m), applies a changed file every 10 s
// and restarts the daemon every minute (SIGTERM and SIGKILL in turn); it
// is `make soak`, not `make test`. Afterwards every frame that reached
// the filter is counted once, by class, as admitted or rejected; no class
// admitted more than its bucket allows for the time gone by; the daemon's
// resident memory did not grow within a life; and the per-source and
// reject tables stayed within their bounds.
func TestSoak(t *testing.T) {
	total := 10 * time.Minute
	if v := os.Getenv("XDPCAC_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("XDPCAC_SOAK=%q: %v", v, err)
		}
		total = d
	}
	tb := harness.NewTestbed(t)
	cfgs := []string{harness.WriteConfig(t, soakConfig(tb, 100)), harness.WriteConfig(t, soakConfig(tb, 200))}
	d := tb.StartDaemon(t, cfgs[0])
	frames := soakFrames()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var sent [3]int // by class: padi, icrq, invite
	var reports []storm.Report
	flood := make(chan error, 1)
	start := time.Now()
	go func() {
		for ctx.Err() == nil && time.Since(start) < total {
			g := storm.Generator{Name: "soak", Duration: 10 * time.Second, Frame: func(i int) []byte { return frames[i%len(frames)] }}
			r, err := g.Run(ctx, tb.Peer, tb.PeerIfc)
			if err != nil {
				flood <- err
				return
			}
			mu.Lock()
			// Refused frames take their index too: frame i is of class i%3.
			for c := range sent {
				n := r.Sent + r.Refused
				sent[c] += (n + 2 - c) / 3
			}
			reports = append(reports, r)
			mu.Unlock()
		}
		flood <- nil
	}()

	type life struct{ pid, startKB, endKB int }
	var lives []life
	cur := life{pid: d.Pid()}
	time.Sleep(5 * time.Second)
	cur.startKB = rssKB(t, cur.pid)
	applies := 0
	for tick := 1; time.Since(start) < total; tick++ {
		time.Sleep(time.Until(start.Add(time.Duration(tick) * 10 * time.Second)))
		v := tb.CallAdmission(t)
		if v.HeartbeatAgeMS == nil || *v.HeartbeatAgeMS > 2000 {
			t.Fatalf("%v in: the daemon stopped writing: heartbeat %v", time.Since(start).Round(time.Second), v.HeartbeatAgeMS)
		}
		if tick%6 == 0 { // a minute: a new daemon
			cur.endKB = rssKB(t, cur.pid)
			lives = append(lives, cur)
			if tick%12 == 0 {
				d.Kill()
			} else {
				d.Signal(syscall.SIGTERM)
			}
			d.Wait()
			d = tb.StartDaemon(t, cfgs[applies%2])
			cur = life{pid: d.Pid()}
			time.Sleep(5 * time.Second)
			cur.startKB = rssKB(t, cur.pid)
			continue
		}
		applies++
		if _, stderr, err := tb.Cacctl(t, "apply", "--config", cfgs[applies%2]); err != nil {
			t.Fatalf("apply %d: %v: %s", applies, err, stderr)
		}
	}
	cur.endKB = rssKB(t, cur.pid)
	lives = append(lives, cur)
	cancel()
	if err := <-flood; err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start).Seconds()

	var total64, refused int
	for _, r := range reports {
		total64 += r.Sent
		refused += r.Refused
	}
	s := tb.Stats(t)
	t.Logf("%.0f s: %d frames sent (%.0f/s), %d refused by the veth; %d applies, %d daemons",
		elapsed, total64, float64(total64)/elapsed, refused, applies, len(lives))
	// A bucket admits its burst, then its rate; each apply or restart that
	// raises the burst from 100 to 200 lets 100 more through at once.
	cps := map[string]float64{"pppoe-padi": 200, "l2tp-icrq": 100, "sip-invite": 100}
	raises := float64(applies + len(lives))
	var seen uint64
	for i, class := range []string{"pppoe-padi", "l2tp-icrq", "sip-invite"} {
		cs := s.Classes[class]
		var rejected uint64
		for _, n := range cs.Reasons {
			rejected += n
		}
		seen += cs.Seen
		t.Logf("%s: %d offered, seen %d = admitted %d + rejected %d", class, sent[i], cs.Seen, cs.Admitted, rejected)
		if cs.Seen != cs.Admitted+rejected || cs.Rejected != rejected {
			t.Errorf("%s: seen %d, admitted %d, rejected %d (by reason %d): they do not add up", class, cs.Seen, cs.Admitted, cs.Rejected, rejected)
		}
		if bound := 200 + 100*raises + cps[class]*elapsed + 1; float64(cs.Admitted) > bound {
			t.Errorf("%s: %d admitted in %.0f s, more than the bucket's %v", class, cs.Admitted, elapsed, bound)
		}
	}
	if seen != uint64(total64) {
		t.Errorf("the filter saw %d first packets, the flood put %d on the wire", seen, total64)
	}
	for _, l := range lives {
		t.Logf("daemon %d: RSS %d kB after 5 s, %d kB at its end", l.pid, l.startKB, l.endKB)
		if l.endKB > l.startKB*3/2+8192 {
			t.Errorf("daemon %d grew from %d kB to %d kB in a minute", l.pid, l.startKB, l.endKB)
		}
	}

	p, err := loader.OpenShared(tb.State)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for name, b := range map[string]struct {
		m     *ebpf.Map
		bound int
	}{"sources": {p.Sources, soakTable}, "rejects": {p.Rejects, int(p.Rejects.MaxEntries())}} {
		n := harness.Entries(t, b.m)
		t.Logf("%s table: %d entries of %d", name, n, b.bound)
		if n > b.bound {
			t.Errorf("%s table holds %d entries, over its bound of %d", name, n, b.bound)
		}
	}
}
