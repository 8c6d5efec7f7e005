package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/sipd"
)

// pingDue starts a ping for every target that is due and not waiting.
func (a *sipAgents) pingDue(ctx context.Context) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, t := range a.targets {
		if a.pinging[k] || t.NextPing(now).After(now) {
			continue
		}
		pg := a.pingers[k.Realm]
		if pg == nil {
			continue
		}
		a.pinging[k] = true
		t.PingSent(now)
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			res, err := pg.Ping(ctx, k.Destination, "")
			if ctx.Err() != nil {
				return
			}
			if err != nil && !errors.Is(err, sipd.ErrTimeout) {
				a.log.Warn("ping session agent", "agent", k.Agent, "destination", k.Destination, "realm", k.Realm, "err", err)
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			delete(a.pinging, k)
			t, ok := a.targets[k]
			if !ok {
				return
			}
			if applyPing(t, time.Now(), res, err) {
				a.changed(k, t)
			}
			a.dirty = true
		}()
	}
}

// applyPing feeds a target the outcome of one ping and reports whether its
// status flipped. The 1xx answers go first in every case, a timeout
// included: without code lists a provisional answer is an answer, so a
// peer that never sends a final one must not count as silent. Any error
// other than a timeout also leaves the ping without a final answer.
func applyPing(t *agents.Target, now time.Time, res sipd.Result, err error) bool {
	changed := false
	for _, p := range res.Provisional {
		changed = t.PingResponse(now, p, 0) || changed
	}
	if err != nil {
		return t.PingTimeout(now) || changed
	}
	return t.PingResponse(now, res.Code, capRetry(res.RetryAfter)) || changed
}
