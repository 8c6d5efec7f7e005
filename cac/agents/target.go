package agents

import (
	"fmt"
	"slices"
	"time"

	"github.com/xdpcac/xdpcac/cac/config"
)

// Rules are the parts of a session agent's configuration that decide its
// status and its ping schedule.
type Rules struct {
	InService    []int         // ping-in-service-response-codes
	OutService   []int         // out-service-response-codes
	FailureCount int           // ping-failure-count; below 1 counts as 1
	Interval     time.Duration // ping-interval
	Continuous   bool          // ping-send-mode continuous; false is keep-alive
}

// RulesOf takes the rules from a configured agent. The code lists are
// copied so that a later edit of the configuration cannot reach a running
// target.
func RulesOf(a config.SessionAgent) Rules {
	return Rules{
		InService:    slices.Clone(a.PingInServiceResponseCodes),
		OutService:   slices.Clone(a.OutServiceResponseCodes),
		FailureCount: a.PingFailureCount,
		Interval:     a.PingInterval,
		Continuous:   a.PingSendMode == "continuous",
	}
}

func (r Rules) normal() Rules {
	r.InService = slices.Clone(r.InService)
	r.OutService = slices.Clone(r.OutService)
	if r.FailureCount < 1 {
		r.FailureCount = 1
	}
	return r
}

// Status is everything a target knows. It is exported and JSON-tagged so
// the daemon can save it across restarts and hand it back to RestoreTarget.
type Status struct {
	InService bool      `json:"in_service"`
	Since     time.Time `json:"since"` // when InService last flipped
	// Reason says why it flipped, for the operator; ReasonNotPinged until
	// the first outcome that decides the status, which replaces it even
	// when the status stays (a failure short of FailureCount decides
	// nothing).
	Reason string `json:"reason"`
	// Failures counts pings in a row that went unanswered or were answered
	// with a code outside the in-service list. Answers that act on their
	// own (out-service codes, INVITE errors) leave it alone.
	Failures int `json:"failures"`
	// LastCode is the code of the last ping answer that was taken into
	// account, 0 after a timeout with no answer at all.
	LastCode int `json:"last_code"`
	// RetryUntil is the end of a Retry-After the agent asked for; no ping
	// goes out before it while the target is out of service.
	RetryUntil  time.Time `json:"retry_until,omitzero"`
	LastPing    time.Time `json:"last_ping,omitzero"`
	LastRequest time.Time `json:"last_request,omitzero"`
}

// ReasonNotPinged is the reason of a target no outcome has judged yet: it
// is in service on trust, not on evidence, so the first deciding outcome
// replaces it even when the status stays the same.
const ReasonNotPinged = "not pinged yet"

// Target is the state of one (destination, realm) pair of an agent.
type Target struct {
	rules Rules
	st    Status
	// heard is set when the ping in flight got a provisional answer that
	// counted; PingSent clears it. Not saved: no ping survives a restart.
	heard bool
}

// NewTarget starts a target in service: an agent is usable until a ping
// says otherwise, so calls are not refused while the first ping is out.
func NewTarget(r Rules, now time.Time) *Target {
	return &Target{rules: r.normal(), st: Status{InService: true, Since: now, Reason: ReasonNotPinged}}
}

// RestoreTarget continues from a saved status, under rules that may have
// changed since it was saved.
func RestoreTarget(r Rules, s Status) *Target {
	return &Target{rules: r.normal(), st: s}
}

// Status returns a copy of the target's state.
func (t *Target) Status() Status { return t.st }

// Rules returns a copy of the rules the target runs under.
func (t *Target) Rules() Rules { return t.rules.normal() }

// PingSent records that a ping left now. A Retry-After that has run out is
// forgotten here, since the ping it was holding back is the one just sent.
func (t *Target) PingSent(now time.Time) {
	t.st.LastPing = now
	t.heard = false
	if !t.st.RetryUntil.IsZero() && !now.Before(t.st.RetryUntil) {
		t.st.RetryUntil = time.Time{}
	}
}

// PingResponse applies an answer to a ping. retryAfter is the Retry-After
// header (0 when absent). It reports whether InService flipped. Codes below
// 100 are not SIP responses and are dropped.
func (t *Target) PingResponse(now time.Time, code int, retryAfter time.Duration) (changed bool) {
	r := t.rules
	lists := len(r.InService) > 0 || len(r.OutService) > 0
	if code < 100 || code < 200 && lists {
		// With a list configured only the final answer is meaningful.
		return false
	}
	t.st.LastCode = code
	if code < 200 {
		// No list is set (see above): Oracle counts any response, so a
		// provisional one already answers this ping, whatever follows.
		t.heard = true
	}
	switch {
	case len(r.InService) > 0:
		// The in-service list is the whole verdict; the out-service list
		// is not consulted at all when it is set.
		if slices.Contains(r.InService, code) {
			return t.up(now, fmt.Sprintf("OPTIONS answered %d (in-service list)", code))
		}
		// Any other answer counts as silence, unless it carries a
		// Retry-After, which is an explicit request to back off.
		t.st.Failures++
		if t.st.Failures < r.FailureCount && retryAfter <= 0 {
			return false
		}
		why := fmt.Sprintf("answered %d, not in the in-service list", code)
		if n := t.st.Failures; n > 1 {
			why += fmt.Sprintf(" (%d failed pings in a row)", n)
		}
		return t.down(now, why, retryAfter)
	case slices.Contains(r.OutService, code):
		return t.down(now, fmt.Sprintf("OPTIONS answered %d (out-service list)", code), retryAfter)
	}
	// Without an in-service list, any answer not on the out-service list
	// proves the agent alive; a Retry-After on it does not matter.
	return t.up(now, fmt.Sprintf("OPTIONS answered %d", code))
}

// PingTimeout applies a ping transaction that ended without a final answer.
// When no code list is set and the ping was answered provisionally (a 1xx
// applied with PingResponse since PingSent), the agent did answer: a peer
// that only ever says 100 Trying stays in service, as with Oracle, and the
// timeout is no failure.
func (t *Target) PingTimeout(now time.Time) (changed bool) {
	if t.heard {
		return false
	}
	t.st.LastCode = 0
	t.st.Failures++
	if t.st.Failures < t.rules.FailureCount {
		return false
	}
	why := "no answer to OPTIONS"
	if n := t.st.Failures; n > 1 {
		why = fmt.Sprintf("no answer to %d OPTIONS", n)
	}
	return t.down(now, why, 0)
}

// DialogResponse applies the agent's answer to a call the SIP server sent
// it. Only an INVITE error on the out-service list counts, and only in
// keep-alive mode: in continuous mode the error may come from a hop behind
// the agent, which is the reason to choose that mode, so only pings judge.
// The method is compared exactly, as SIP methods are case-sensitive.
func (t *Target) DialogResponse(now time.Time, code int, cseqMethod string, retryAfter time.Duration) (changed bool) {
	if t.rules.Continuous || cseqMethod != "INVITE" || code < 300 || !slices.Contains(t.rules.OutService, code) {
		return false
	}
	return t.down(now, fmt.Sprintf("INVITE answered %d", code), retryAfter)
}

// RequestSeen applies any SIP request from the agent: something that sends
// requests is alive, whatever the pings said, and it wants calls back now
// rather than when its Retry-After ends.
func (t *Target) RequestSeen(now time.Time) (changed bool) {
	t.st.LastRequest = now
	return t.up(now, "request from agent")
}

// NextPing is when the next ping is due; it may be in the past, meaning
// "now". In keep-alive mode an in-service target that keeps sending
// requests needs no ping, so each request pushes the ping back. A pending
// Retry-After delays pings of an out-of-service target in either mode.
func (t *Target) NextPing(now time.Time) time.Time {
	st := t.st
	last := st.LastPing
	if st.InService && !t.rules.Continuous && st.LastRequest.After(last) {
		last = st.LastRequest
	}
	next := now // nothing to count from: find out at once
	if !last.IsZero() {
		next = last.Add(t.rules.Interval)
	}
	if !st.InService && next.Before(st.RetryUntil) {
		next = st.RetryUntil
	}
	return next
}

// up brings the target into service; every such outcome also ends the
// failure streak and any Retry-After.
func (t *Target) up(now time.Time, why string) bool {
	t.st.Failures = 0
	t.st.RetryUntil = time.Time{}
	return t.set(now, true, why)
}

// down takes the target out of service. A Retry-After is recorded even when
// it is out already, as the agent's latest word on when to come back.
func (t *Target) down(now time.Time, why string, retryAfter time.Duration) bool {
	if retryAfter > 0 {
		t.st.RetryUntil = now.Add(retryAfter)
		why += fmt.Sprintf(", Retry-After %gs", retryAfter.Seconds())
	}
	return t.set(now, false, why)
}

// set records a flip; Since and Reason describe the last flip only, so
// repeated outcomes of the same kind do not move them. The one exception is
// the first outcome of a target still at ReasonNotPinged: it confirms the
// status rather than flips it, so Since stays, but "not pinged yet" would
// be false from then on.
func (t *Target) set(now time.Time, in bool, why string) bool {
	if t.st.InService == in {
		if t.st.Reason == ReasonNotPinged {
			t.st.Reason = why
		}
		return false
	}
	t.st.InService, t.st.Since, t.st.Reason = in, now, why
	return true
}
