package daemon

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/violation"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// violations reads show violations -o json.
func violations(t *testing.T, tb *harness.Testbed) []violation.View {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "show", "violations", "-o", "json")
	if err != nil {
		t.Fatalf("show violations: %v: %s", err, stderr)
	}
	var v []violation.View
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show violations -o json: %v\n%s", err, out)
	}
	return v
}

// TestShowViolations: a PADI storm over the class limit is a violation
// of pppoe-padi at the class level from its first refusal, refusing as
// many as show stats counts, with its arrival rate; three seconds after
// the storm it has ended and is still listed. Without the daemon the
// command says who keeps violations.
func TestShowViolations(t *testing.T) {
	tb := harness.NewTestbed(t)
	if _, stderr, err := tb.Cacctl(t, "show", "violations"); err == nil || !strings.Contains(stderr, "no cacctl run serves this state directory") {
		t.Errorf("show violations without a daemon: %v: %s", err, stderr)
	}
	tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 5, "")))
	if v := violations(t, tb); len(v) != 0 {
		t.Fatalf("violations before any PADI: %+v", v)
	}
	start := time.Now()
	frames := make([][]byte, 200)
	for i := range frames {
		frames[i] = harness.Padi
	}
	// Three seconds of 200 PADIs: a storm the class's burst of 5 refuses.
	for i := range 3 {
		testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
		if i < 2 {
			time.Sleep(time.Second) // the storm's pace, not a wait for a result
		}
	}
	refused := func() uint64 { return tb.Stats(t).Classes["pppoe-padi"].Reasons["class"] }
	if n := refused(); n != 600-5 {
		t.Fatalf("show stats: %d PADIs refused by class, want 595", n)
	}
	var v []violation.View
	testenv.WaitFor(t, func() bool {
		v = violations(t, tb)
		return len(v) == 1 && v[0].Rejected == 595
	})
	got := v[0]
	if got.Class != "pppoe-padi" || got.Level != "class" || got.Episodes != 1 ||
		got.Since.Before(start.Add(-time.Second)) || got.Since.After(time.Now()) {
		t.Errorf("the storm's violation: %+v, want pppoe-padi at class since about %v", got, start)
	}
	if got.Arrival.Peak5m < 100 || got.Refused.Peak5m < 100 || got.Arrival.Peak5m < got.Refused.Peak5m {
		t.Errorf("rates of a storm of 200 a second: arrival %+v, refused %+v", got.Arrival, got.Refused)
	}
	// Hold (3 s) after its last refusal it has ended, and is still shown.
	if !testenv.Poll(violation.Hold+3*time.Second, 100*time.Millisecond, func() bool {
		v = violations(t, tb)
		return len(v) == 1 && !v[0].InViolation
	}) {
		t.Fatalf("the storm's violation did not end: %+v", v)
	}
	if v[0].Ended == nil || v[0].Ended.Before(v[0].Since) || v[0].Refused.Now != 0 {
		t.Errorf("ended: %+v", v[0])
	}
	out, _, err := tb.Cacctl(t, "show", "violations")
	if err != nil || !strings.Contains(out, "pppoe-padi") || !strings.Contains(out, "class") {
		t.Errorf("show violations: %v\n%s", err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 80 {
			t.Errorf("a line of %d columns:\n%s", len(l), out)
		}
	}
}
