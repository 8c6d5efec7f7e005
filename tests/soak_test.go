//go:build soak

package tests

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/gen"
	"github.com/xdpcac/xdpcac/tests/pkt"
)

// TestSoak runs the daemon under every storm in turn for XDPCAC_SOAK
// (default 10m): `make soak`, not `make test`. Every round it checks that
// the daemon still writes its heartbeat and that no class admitted more
// than its bucket allows for the time gone by.
func TestSoak(t *testing.T) {
	total := 10 * time.Minute
	if v := os.Getenv("XDPCAC_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("XDPCAC_SOAK=%q: %v", v, err)
		}
		total = d
	}
	tb := newTestbed(t)
	cfg := e2eConfig + "interfaces: [{name: " + tb.boxIface + "}]\ncpu: {sample-interval: 500ms}\n" +
		"classes:\n  pppoe-padi: {cps: 200, burst: 200, per-source: {key: mac, cps: 1, burst: 2}}\n" +
		"  l2tp-icrq: {cps: 100, burst: 100}\n  sip-invite: {cps: 100, burst: 100, per-source: {cps: 1, burst: 2}}\n" +
		ios("new-model", "limit 300", "cpu-limit 95", "pppoe 1 1", "vpdn 1 1")
	tb.startDaemon(t, writeConfig(t, cfg))
	bras := netip.MustParseAddr("192.0.2.1")
	storms := []gen.Generator{
		{Name: "padi-storm", Rate: 3000, Duration: 10 * time.Second, Frame: gen.PADIStorm(20000, 100, 200)},
		{Name: "icrq-burst", Rate: 1000, Duration: 10 * time.Second, Frame: gen.L2TPFlood(pkt.ICRQ, netip.MustParseAddr("198.51.100.1"), bras)},
		{Name: "sip-flood", Rate: 3000, Duration: 10 * time.Second, Frame: gen.SIPFlood("INVITE", netip.MustParseAddr("203.0.113.1"), 200, bras)},
	}
	start := time.Now()
	for round := 0; time.Since(start) < total; round++ {
		r, err := storms[round%len(storms)].Run(context.Background(), tb.peer, tb.peerIfc)
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start).Seconds()
		v := tb.callAdmission(t)
		s := tb.stats(t)
		t.Logf("%.0fs %s; heartbeat %v ms ago; padi %d admitted, icrq %d, invite %d", elapsed, r,
			*v.HeartbeatAgeMS, s.Classes["pppoe-padi"].Admitted, s.Classes["l2tp-icrq"].Admitted, s.Classes["sip-invite"].Admitted)
		if v.HeartbeatAgeMS == nil || *v.HeartbeatAgeMS > 2000 {
			t.Fatalf("the daemon stopped writing: heartbeat %v", v.HeartbeatAgeMS)
		}
		for class, b := range map[string][2]float64{"pppoe-padi": {200, 200}, "l2tp-icrq": {100, 100}, "sip-invite": {100, 100}} {
			if got := float64(s.Classes[class].Admitted); got > b[0]+b[1]*elapsed+1 {
				t.Fatalf("%s: %v admitted in %.0fs, more than %v + %v a second", class, got, elapsed, b[0], b[1])
			}
		}
	}
}
