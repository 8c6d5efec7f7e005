package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/sipd"
)

// TestApplyPing: what the daemon does with a Ping's outcome. A ping that
// got only a 1xx before Timer F keeps a target without code lists in
// service; with a list, or with no answer at all, it is a failure.
func TestApplyPing(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	timeout := fmt.Errorf("sipd: ping 192.0.2.2:5060: %w", sipd.ErrTimeout)
	ringing := sipd.Result{Provisional: []int{100, 180}}
	for _, c := range []struct {
		name  string
		rules agents.Rules
		res   sipd.Result
		err   error
		in    bool
	}{
		{"1xx only, no lists", agents.Rules{}, ringing, timeout, true},
		{"1xx only, transaction ended otherwise", agents.Rules{}, ringing, fmt.Errorf("transport: %w", sipd.ErrClosed), true},
		{"1xx only, in-service list", agents.Rules{InService: []int{200}}, ringing, timeout, false},
		{"1xx only, out-service list", agents.Rules{OutService: []int{503}}, ringing, timeout, false},
		{"silence, no lists", agents.Rules{}, sipd.Result{}, timeout, false},
		{"1xx then 503, out-service list", agents.Rules{OutService: []int{503}}, sipd.Result{Code: 503, Provisional: []int{100}}, nil, false},
		{"1xx then 404, no lists", agents.Rules{}, sipd.Result{Code: 404, Provisional: []int{100}}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := agents.NewTarget(c.rules, t0)
			tg.PingSent(t0)
			changed := applyPing(tg, t0.Add(33*time.Second), c.res, c.err)
			if st := tg.Status(); st.InService != c.in || changed == c.in {
				t.Errorf("in service %v (changed %v, %q), want %v", st.InService, changed, st.Reason, c.in)
			}
		})
	}

	// The next ping, unanswered, is a failure again: a 1xx counts for the
	// ping it answered only.
	tg := agents.NewTarget(agents.Rules{}, t0)
	tg.PingSent(t0)
	applyPing(tg, t0.Add(33*time.Second), ringing, timeout)
	tg.PingSent(t0.Add(40 * time.Second))
	if !applyPing(tg, t0.Add(73*time.Second), sipd.Result{}, timeout) || tg.Status().InService {
		t.Errorf("silent ping after a provisional one: %+v, want out of service", tg.Status())
	}
}
