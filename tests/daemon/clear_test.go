package daemon

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// sendPadis sends n PADIs and waits until show stats, cleared before,
// has counted them.
func sendPadis(t *testing.T, tb *harness.Testbed, n int) {
	t.Helper()
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = harness.Padi
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen >= uint64(n) })
}

// metric is the value of the one series of a scrape that line starts, as
// `name{labels} `; it fails without one.
func metric(t *testing.T, scrape, series string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\d+)$`).FindStringSubmatch(scrape)
	if m == nil {
		t.Fatalf("no series %s in the scrape:\n%s", series, harness.GrepLines(scrape, "pppoe-padi"))
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClearCountersKeepsMetrics: clear counters, and IOS's clear call
// admission statistics, make show stats, its JSON and show call admission
// statistics count from zero, while the metrics' _total counters go on
// from where they were: a Prometheus counter never goes back.
func TestClearCountersKeepsMetrics(t *testing.T) {
	tb := harness.NewTestbed(t)
	tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1000, "metrics: {listen: \"127.0.0.1:0\"}\n")))
	iface := tb.Box + ":" + tb.BoxIface
	admitted := `xdpcac_packets_total{class="pppoe-padi",iface="` + iface + `",verdict="pass"}`
	accepted := `xdpcac_calls_total{result="accepted"}`

	sendPadis(t, tb, 30)
	if out, stderr, err := tb.Cacctl(t, "clear", "counters", tb.BoxIface); err != nil || !strings.Contains(out, "cleared the counters of") {
		t.Fatalf("clear counters %s: %v: %s%s", tb.BoxIface, err, out, stderr)
	}
	v := tb.Stats(t)
	if n := v.Classes["pppoe-padi"].Seen; n != 0 || v.ClearedAt == nil || v.Interfaces[iface].ClearedAt == nil {
		t.Errorf("show stats -o json right after clear counters: %d PADIs, cleared at %v, on %s %v; want 0 and a time",
			n, v.ClearedAt, iface, v.Interfaces[iface].ClearedAt)
	}
	sendPadis(t, tb, 20)
	v = tb.Stats(t)
	if n, on := v.Classes["pppoe-padi"].Admitted, v.Interfaces[iface].Classes["pppoe-padi"].Admitted; n != 20 || on != 20 {
		t.Errorf("show stats -o json: %d PADIs admitted, %d on %s; want the 20 since clear counters", n, on, iface)
	}
	if ca := tb.CallAdmission(t); ca.Accepted != 20 || ca.ClearedAt == nil {
		t.Errorf("show call admission statistics -o json: %d accepted, cleared at %v; want the 20 since the clear, and its time", ca.Accepted, ca.ClearedAt)
	}
	if out, _, err := tb.Cacctl(t, "show", "stats"); err != nil || !strings.Contains(out, "last clearing of counters") {
		t.Errorf("show stats does not say when the counters were cleared: %v\n%s", err, out)
	}
	scrape := tb.Metrics(t)
	if n := metric(t, scrape, admitted); n != 50 {
		t.Errorf("%s is %d after clear counters, want all 50: a counter must never go back", admitted, n)
	}
	if n := metric(t, scrape, accepted); n != 50 {
		t.Errorf("%s is %d after clear counters, want all 50", accepted, n)
	}

	// IOS's spelling clears every interface the same way.
	if out, stderr, err := tb.Cacctl(t, "clear", "call", "admission", "statistics"); err != nil {
		t.Fatalf("clear call admission statistics: %v: %s%s", err, out, stderr)
	}
	sendPadis(t, tb, 5)
	if ca := tb.CallAdmission(t); ca.Accepted != 5 {
		t.Errorf("show call admission statistics after clear call admission statistics: %d accepted, want 5", ca.Accepted)
	}
	if n := metric(t, tb.Metrics(t), admitted); n != 55 {
		t.Errorf("%s is %d, want all 55", admitted, n)
	}
}
