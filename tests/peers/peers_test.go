package peers

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestRealPPPoE: pppoe-server is the BRAS behind the filter and
// pppoe-discovery a client. Its first PADI is admitted and answered with
// a PADO; with one discovery a MAC allowed, its next run's PADIs are
// rejected by source and it finds no access concentrator.
func TestRealPPPoE(t *testing.T) {
	tb := harness.NewTestbed(t)
	testenv.RequireTool(t, "pppoe-discovery", "pppoe")
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {per-source: {key: mac, cps: 0.001, burst: 1}}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	// It waits for the server's discovery socket: a PADI sent before
	// the server listens would spend the MAC's one discovery.
	pppoeServer(t, tb)

	discover := func() (string, error) {
		out, err := testenv.Command(tb.Peer, "pppoe-discovery", "-I", tb.PeerIfc, "-t", "1", "-a", "2").CombinedOutput()
		return string(out), err
	}
	out, err := discover()
	if err != nil || !strings.Contains(out, "Access-Concentrator: xdpcac-test") {
		t.Fatalf("first discovery: %v\n%s", err, out)
	}
	before := tb.Stats(t).Classes["pppoe-padi"]
	out, err = discover()
	if err == nil || strings.Contains(out, "Access-Concentrator") {
		t.Errorf("second discovery from the same MAC found an access concentrator: %v\n%s", err, out)
	}
	after := tb.Stats(t).Classes["pppoe-padi"]
	if after.Admitted != before.Admitted || after.Reasons["source"] < before.Reasons["source"]+2 {
		t.Errorf("PADIs of the second discovery: before %+v, after %+v; want 2 more rejected by source, none admitted", before, after)
	}
	t.Logf("pppoe-padi: %+v", after)
}

// sippCount reads a cumulative count ("Successful call", "Failed call")
// from sipp's final statistics screen.
func sippCount(t *testing.T, log, what string) int {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), what) {
			continue
		}
		f := strings.Split(line, "|")
		if n, err := strconv.Atoi(strings.TrimSpace(f[len(f)-1])); err == nil {
			return n
		}
	}
	t.Fatalf("sipp's report has no %q line:\n%s", what, log)
	return 0
}

// TestRealSIPFlood: sipp as UAC calls at 40 a second into sipp as UAS
// behind the filter, whose sip-invite class takes 10 at once and 5 a
// second. Calls the filter held back fail at the caller; those that got
// through are answered; and no more INVITEs pass than the bucket allows.
func TestRealSIPFlood(t *testing.T) {
	tb := harness.SipTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  sip-invite: {cps: 5, burst: 10}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	uas := testenv.StartSipp(t, tb.Box, "-sf", testenv.ScenarioPath(t, "invite-uas"), "-i", harness.BoxIP, "-p", "5060", "-t", "u1")
	defer uas.Stop()
	start := time.Now()
	uac := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "invite-uac-200"), "-i", harness.AgentIP, "-p", "5062", "-t", "u1",
		"-m", "40", "-r", "40", "-recv_timeout", "1500", harness.BoxIP+":5060")
	uac.Wait(30 * time.Second) // it fails: some calls were held back
	elapsed := time.Since(start).Seconds()
	ok, failed := sippCount(t, uac.Log(), "Successful call"), sippCount(t, uac.Log(), "Failed call")
	inv := tb.Stats(t).Classes["sip-invite"]
	t.Logf("in %.1fs: sipp %d calls answered, %d failed; filter %+v", elapsed, ok, failed, inv)
	if ok == 0 || failed == 0 || ok+failed != 40 {
		t.Errorf("sipp: %d answered and %d failed of 40, want some of each", ok, failed)
	}
	if uint64(ok) > inv.Admitted || float64(inv.Admitted) > 10+5*elapsed+1 {
		t.Errorf("%d INVITEs admitted for %d answered calls in %.1fs; want at least one per call, at most 10 + 5 a second", inv.Admitted, ok, elapsed)
	}
	if inv.Reasons["class"] == 0 {
		t.Errorf("no INVITE rejected by class: %+v", inv)
	}
}
