package peers

import (
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// autoDenyConfig denies a source refused 10 times within 10 s for 45 s:
// long enough for every scan of the test to run against it (about 20 s,
// each svwar waiting for answers that never come).
const autoDenyConfig = "access: {auto-deny: {refused: 10, within: 10s, deny-for: 45s}}\n"

// denyRecord is a record of the deny table in the daemon's rejects log.
type denyRecord struct {
	Source, Event, Reason string
	Refusals              uint32
	Frames                uint64
}

// denyRecords reads the deny table's records of src from a rejects log.
func denyRecords(t *testing.T, path string, src netip.Addr) []denyRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []denyRecord
	for _, l := range strings.Split(string(data), "\n") {
		var r denyRecord
		if l == "" || json.Unmarshal([]byte(l), &r) != nil || r.Event == "" || r.Source != src.String() {
			continue // a line still being written, or a reject record
		}
		out = append(out, r)
	}
	return out
}

// TestScannerAutoDenied: sipvicious scans Kamailio behind a daemon with
// per-source limits and auto-deny (10 refusals within 10 s deny for 45
// s). svwar's REGISTER scan is refused by its per-source bucket until its
// tenth refusal denies it; from then on Kamailio handles none of its
// requests of any class (svwar's INVITEs and OPTIONS, svmap's) while the
// deny table holds it, and the fast path counts what it dropped. Once
// deny-for is over the daemon records the release and Kamailio answers the
// scanner again. The rejects log has one record of each. Meanwhile sipp,
// a session agent, places 100 calls, all completed: agents are never
// denied.
func TestScannerAutoDenied(t *testing.T) {
	testenv.RequireTool(t, "svwar", "sipvicious")
	testenv.RequireTool(t, "svmap", "sipvicious")
	testenv.RequireTool(t, "sipp", "sip-tester")
	tb := harness.NewTestbed(t)
	b := kamBox(t, tb)
	d := tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		scannerClasses+autoDenyConfig+
		"realms: [{name: core, address: "+kamBoxV4+"}]\n"+
		"session-agents: [{name: pbx, hostname: "+kamPeerV4+", realm-id: core, ping-interval: 1h}]\n"))
	scanner := b.source(t, 40, false)

	uac := testenv.StartSipp(t, b.Peer, "-sf", testenv.ScenarioPath(t, "invite-uac-200"), "-i", kamPeerV4, "-p", "5070",
		"-t", "u1", "-m", "100", "-r", "4", "-recv_timeout", "5000", kamBoxV4+":5060")

	// The scan that earns the denial: 3 REGISTERs pass, and then one a
	// second, until the tenth refusal.
	took := b.scan(t, scanner, "svwar", "-m", "REGISTER", "-e", "100-999")
	if !testenv.Poll(5*time.Second, 50*time.Millisecond, func() bool { _, ok := tb.DenyEntry(t, scanner); return ok }) {
		t.Fatalf("svwar's source is not in the deny table after its scan: %+v", tb.Stats(t))
	}
	entry, _ := tb.DenyEntry(t, scanner)
	before := b.handledFrom(scanner)
	t.Logf("svwar REGISTER for %v: denied after %d refusals; Kamailio handled %d of its REGISTERs", took.Round(time.Millisecond), entry.Refusals, before)
	if entry.Refusals != 10 {
		t.Errorf("denied after %d refusals, want 10", entry.Refusals)
	}
	if limit := 3 + int(took.Seconds()) + 1; before == 0 || before > limit {
		t.Errorf("Kamailio handled %d of svwar's REGISTERs before the denial, want 1 to %d", before, limit)
	}

	// Every class while denied: not one request reaches Kamailio.
	statsBefore := tb.Stats(t)
	for _, s := range [][]string{
		{"svwar", "-m", "INVITE", "-e", "100-999"},
		{"svwar", "-m", "OPTIONS", "-e", "100-999"},
		{"svmap", "-m", "INVITE", "-p", "5060,5080"},
		{"svmap", "-p", "5060,5080"},
	} {
		b.scan(t, scanner, s[0], s[1:]...)
	}
	during := b.handledFrom(scanner)
	entry, held := tb.DenyEntry(t, scanner)
	now := control.MonotonicCoarse()
	statsAfter := tb.Stats(t)
	dropped := statsAfter.DeniedAuto - statsBefore.DeniedAuto
	t.Logf("while denied: Kamailio handled %d more; the fast path dropped %d frames (%d counted for it)", during-before, dropped, entry.Frames)
	if !held || now+uint64(time.Second) > entry.UntilNs {
		t.Fatalf("the scans outlasted the denial (until %d, now %d): deny-for is too short for the test", entry.UntilNs, now)
	}
	if during != before {
		t.Errorf("Kamailio handled %d requests of the denied scanner", during-before)
	}
	if dropped == 0 || entry.Frames < dropped {
		t.Errorf("the fast path dropped %d of the scanner's frames while denied, counted %d for it", dropped, entry.Frames)
	}

	// Released: the daemon records it, and Kamailio answers again.
	left := time.Duration(entry.UntilNs - now)
	if !testenv.Poll(left+10*time.Second, 100*time.Millisecond, func() bool {
		for _, r := range denyRecords(t, d.RejectsLog, scanner) {
			if r.Event == "released" {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no release of the scanner recorded 10 s after its until")
	}
	b.scan(t, scanner, "svmap", "-p", "5060,5080")
	after := b.handledFrom(scanner)
	if after == during {
		t.Errorf("Kamailio handled none of svmap's OPTIONS after the release")
	}
	recs := denyRecords(t, d.RejectsLog, scanner)
	var denied, released int
	for _, r := range recs {
		switch r.Event {
		case "denied":
			denied++
		case "released":
			released++
		}
	}
	t.Logf("the deny table's records of the scanner: %+v", recs)
	for _, r := range recs {
		if r.Event == "denied" && r.Refusals != 10 {
			t.Errorf("the denied record has %d refusals, want 10", r.Refusals)
		}
	}
	if denied != 1 || released != 1 {
		t.Errorf("%d denied and %d released records of the scanner, want one of each: %+v", denied, released, recs)
	}

	if err := uac.Wait(time.Minute); err != nil {
		t.Fatalf("the agent's 100 calls did not all complete: %v\n%s", err, uac.Log())
	}
	if ok := sippCount(t, uac.Log(), "Successful call"); ok != 100 {
		t.Errorf("the agent completed %d of 100 calls", ok)
	}
	if _, agentDenied := tb.DenyEntry(t, netip.MustParseAddr(kamPeerV4)); agentDenied {
		t.Errorf("the session agent is in the deny table")
	}
}
