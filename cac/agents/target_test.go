package agents

import (
	"testing"
	"time"
)

// t0 is the fake clock's origin; every time in the tables is seconds after it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

type event int

const (
	check   event = iota // nothing happens; only the expectations are checked
	sent                 // PingSent
	resp                 // PingResponse(code, ra)
	timeout              // PingTimeout
	dialog               // DialogResponse(code, method, ra)
	request              // RequestSeen
)

// step is one event at a time and the state expected right after it.
type step struct {
	at      int // seconds after t0
	ev      event
	code    int
	method  string
	ra      int // Retry-After, seconds
	changed bool
	in      bool
	fails   int
	next    int    // NextPing(at), seconds after t0
	reason  string // checked when not empty
}

func (s step) apply(tg *Target) bool {
	now, ra := at(s.at), time.Duration(s.ra)*time.Second
	switch s.ev {
	case sent:
		tg.PingSent(now)
	case resp:
		return tg.PingResponse(now, s.code, ra)
	case timeout:
		return tg.PingTimeout(now)
	case dialog:
		return tg.DialogResponse(now, s.code, s.method, ra)
	case request:
		return tg.RequestSeen(now)
	}
	return false
}

func TestTarget(t *testing.T) {
	ka := func(in, out []int, n int) Rules {
		return Rules{InService: in, OutService: out, FailureCount: n, Interval: 10 * time.Second}
	}
	cont := func(in, out []int, n int) Rules { r := ka(in, out, n); r.Continuous = true; return r }
	ok, only503 := []int{200}, []int{503}

	cases := []struct {
		name  string
		rules Rules
		steps []step
	}{
		{"starts in service, first ping due at once", ka(nil, nil, 1), []step{
			{at: 0, ev: check, in: true, next: 0, reason: "not pinged yet"},
			{at: 4, ev: check, in: true, next: 4},
		}},
		{"no lists: any final answer keeps it in service", ka(nil, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, in: true, next: 10},
			{at: 10, ev: sent, in: true, next: 20},
			{at: 11, ev: resp, code: 404, ra: 30, in: true, next: 20},
		}},
		{"no lists: a provisional answer counts", ka(nil, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 5, ev: timeout, changed: true, fails: 1, next: 10, reason: "no answer to OPTIONS"},
			{at: 10, ev: sent, fails: 1, next: 20},
			{at: 11, ev: resp, code: 100, changed: true, in: true, next: 20, reason: "OPTIONS answered 100"},
		}},
		{"no lists: a ping answered only provisionally keeps it in service", ka(nil, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 100, in: true, next: 10, reason: "OPTIONS answered 100"},
			{at: 33, ev: timeout, in: true, next: 10}, // Timer F after the 1xx
			{at: 40, ev: sent, in: true, next: 50},
			{at: 41, ev: resp, code: 180, in: true, next: 50},
			{at: 73, ev: timeout, in: true, next: 50},
			{at: 80, ev: sent, in: true, next: 90},
			{at: 85, ev: timeout, changed: true, fails: 1, next: 90, reason: "no answer to OPTIONS"}, // silence still is
		}},
		{"no lists: a provisional answer brings it back with no final one", ka(nil, nil, 2), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 5, ev: timeout, in: true, fails: 1, next: 10},
			{at: 10, ev: sent, in: true, fails: 1, next: 20},
			{at: 15, ev: timeout, changed: true, fails: 2, next: 20},
			{at: 20, ev: sent, fails: 2, next: 30},
			{at: 21, ev: resp, code: 100, changed: true, in: true, next: 30},
			{at: 53, ev: timeout, in: true, next: 30},
		}},
		{"in-service list: a ping answered only provisionally is a failure", ka(ok, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 100, in: true, next: 10},
			{at: 33, ev: timeout, changed: true, fails: 1, next: 10},
		}},
		{"out-service list: a ping answered only provisionally is a failure", ka(nil, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 180, in: true, next: 10},
			{at: 33, ev: timeout, changed: true, fails: 1, next: 10},
		}},
		{"in-service list: provisional ignored", ka(ok, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 5, ev: timeout, changed: true, fails: 1, next: 10},
			{at: 10, ev: sent, fails: 1, next: 20},
			{at: 11, ev: resp, code: 180, fails: 1, next: 20},
			{at: 12, ev: resp, code: 200, changed: true, in: true, next: 20, reason: "OPTIONS answered 200 (in-service list)"},
		}},
		{"out-service list: provisional ignored", ka(nil, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, changed: true, next: 10, reason: "OPTIONS answered 503 (out-service list)"},
			{at: 10, ev: sent, next: 20},
			{at: 11, ev: resp, code: 100, next: 20},
			{at: 12, ev: resp, code: 200, changed: true, in: true, next: 20},
		}},
		{"out-service list: other codes keep it in service", ka(nil, only503, 3), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 404, in: true, next: 10},
			{at: 10, ev: sent, in: true, next: 20},
			{at: 11, ev: resp, code: 503, changed: true, next: 20},
		}},
		{"in-service list wins: out-service code only counts as a failure", ka(ok, only503, 2), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, in: true, fails: 1, next: 10},
			{at: 10, ev: sent, in: true, fails: 1, next: 20},
			{at: 11, ev: resp, code: 404, changed: true, fails: 2, next: 20,
				reason: "answered 404, not in the in-service list (2 failed pings in a row)"},
			{at: 20, ev: sent, fails: 2, next: 30},
			{at: 21, ev: resp, code: 200, changed: true, in: true, next: 30},
		}},
		{"in-service list wins for a code on both lists", ka([]int{200, 503}, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, in: true, next: 10},
		}},
		{"ping-failure-count=3: mismatches and timeouts are the same", ka(ok, nil, 3), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 404, in: true, fails: 1, next: 10},
			{at: 10, ev: sent, in: true, fails: 1, next: 20},
			{at: 15, ev: timeout, in: true, fails: 2, next: 20},
			{at: 20, ev: sent, in: true, fails: 2, next: 30},
			{at: 21, ev: resp, code: 486, changed: true, fails: 3, next: 30},
			{at: 30, ev: sent, fails: 3, next: 40},
			{at: 31, ev: resp, code: 200, changed: true, in: true, next: 40},
		}},
		{"ping-failure-count=3: three mismatches", ka(ok, nil, 3), []step{
			{at: 1, ev: resp, code: 404, in: true, fails: 1, next: 1},
			{at: 2, ev: resp, code: 404, in: true, fails: 2, next: 2},
			{at: 3, ev: resp, code: 404, changed: true, fails: 3, next: 3},
		}},
		{"ping-failure-count=3: three timeouts", ka(nil, nil, 3), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 5, ev: timeout, in: true, fails: 1, next: 10},
			{at: 10, ev: sent, in: true, fails: 1, next: 20},
			{at: 15, ev: timeout, in: true, fails: 2, next: 20},
			{at: 20, ev: sent, in: true, fails: 2, next: 30},
			{at: 25, ev: timeout, changed: true, fails: 3, next: 30, reason: "no answer to 3 OPTIONS"},
			{at: 30, ev: sent, fails: 3, next: 40},
			{at: 35, ev: timeout, fails: 4, next: 40, reason: "no answer to 3 OPTIONS"},
		}},
		{"ping-failure-count 0 means 1", ka(nil, nil, 0), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 5, ev: timeout, changed: true, fails: 1, next: 10},
		}},
		{"an answer resets the failure streak", ka(nil, nil, 3), []step{
			{at: 0, ev: timeout, in: true, fails: 1, next: 0},
			{at: 1, ev: timeout, in: true, fails: 2, next: 1},
			{at: 2, ev: resp, code: 200, in: true, next: 2},
			{at: 3, ev: timeout, in: true, fails: 1, next: 3},
		}},
		{"503 with Retry-After 30s, then a request", ka(nil, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, ra: 30, changed: true, next: 31,
				reason: "OPTIONS answered 503 (out-service list), Retry-After 30s"},
			{at: 20, ev: request, changed: true, in: true, next: 30, reason: "request from agent"},
		}},
		{"Retry-After: next ping at its end, then the interval again", ka(nil, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, ra: 30, changed: true, next: 31},
			{at: 31, ev: sent, next: 41},
			{at: 32, ev: resp, code: 200, changed: true, in: true, next: 41},
		}},
		{"Retry-After shorter than the interval does not hurry the ping", Rules{OutService: only503, Interval: time.Minute}, []step{
			{at: 0, ev: sent, in: true, next: 60},
			{at: 1, ev: resp, code: 503, ra: 30, changed: true, next: 60},
		}},
		{"Retry-After on a mismatch takes it out at once", ka(ok, nil, 3), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, ra: 30, changed: true, fails: 1, next: 31},
		}},
		{"Retry-After in continuous mode", cont(nil, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: resp, code: 503, ra: 30, changed: true, next: 31},
		}},
		{"keep-alive: requests push the ping back", ka(nil, nil, 1), []step{
			{at: 0, ev: check, in: true, next: 0},
			{at: 3, ev: request, in: true, next: 13},
			{at: 12, ev: request, in: true, next: 22},
			{at: 22, ev: sent, in: true, next: 32},
			{at: 25, ev: request, in: true, next: 35},
			{at: 26, ev: resp, code: 200, in: true, next: 35},
		}},
		{"keep-alive out of service: pings on the interval", ka(nil, nil, 1), []step{
			{at: 0, ev: request, in: true, next: 10},
			{at: 10, ev: sent, in: true, next: 20},
			{at: 15, ev: timeout, changed: true, fails: 1, next: 20},
		}},
		{"continuous: pings whatever the traffic", cont(nil, nil, 1), []step{
			{at: 3, ev: request, in: true, next: 3},
			{at: 5, ev: sent, in: true, next: 15},
			{at: 8, ev: request, in: true, next: 15},
			{at: 9, ev: resp, code: 200, in: true, next: 15},
		}},
		{"continuous: dialog answers are ignored", cont(nil, only503, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 1, ev: dialog, code: 503, method: "INVITE", ra: 30, in: true, next: 10},
			{at: 2, ev: resp, code: 503, changed: true, next: 10},
		}},
		{"keep-alive: INVITE error on the out-service list", ka(nil, only503, 1), []step{
			{at: 1, ev: dialog, code: 503, method: "INVITE", changed: true, next: 1, reason: "INVITE answered 503"},
			{at: 2, ev: request, changed: true, in: true, next: 12},
			{at: 3, ev: dialog, code: 503, method: "INVITE", ra: 30, changed: true, next: 33,
				reason: "INVITE answered 503, Retry-After 30s"},
		}},
		{"dialog answers that change nothing", ka(nil, []int{180, 503}, 1), []step{
			{at: 0, ev: dialog, code: 180, method: "INVITE", in: true, next: 0},
			{at: 1, ev: dialog, code: 200, method: "INVITE", in: true, next: 1},
			{at: 2, ev: dialog, code: 503, method: "OPTIONS", in: true, next: 2},
			{at: 3, ev: dialog, code: 503, method: "invite", in: true, next: 3},
			{at: 4, ev: dialog, code: 500, method: "INVITE", in: true, next: 4},
			{at: 5, ev: dialog, code: 503, method: "INVITE", changed: true, next: 5},
		}},
		{"dialog answers use the out-service list even with an in-service list", ka(ok, only503, 1), []step{
			{at: 1, ev: dialog, code: 503, method: "INVITE", changed: true, next: 1},
		}},
		{"a request ends a failure streak", ka(nil, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 5, ev: timeout, changed: true, fails: 1, next: 10},
			{at: 7, ev: request, changed: true, in: true, next: 17},
		}},
		{"a late timeout still applies after a request", ka(nil, nil, 1), []step{
			{at: 0, ev: sent, in: true, next: 10},
			{at: 2, ev: request, in: true, next: 12},
			{at: 5, ev: timeout, changed: true, fails: 1, next: 10},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := NewTarget(c.rules, t0)
			for i, s := range c.steps {
				changed := s.apply(tg)
				st := tg.Status()
				next := int(tg.NextPing(at(s.at)).Sub(t0) / time.Second)
				if changed != s.changed || st.InService != s.in || st.Failures != s.fails || next != s.next {
					t.Errorf("step %d (t=%d): changed %v in %v failures %d next %d; want %v %v %d %d",
						i, s.at, changed, st.InService, st.Failures, next, s.changed, s.in, s.fails, s.next)
				}
				if s.reason != "" && st.Reason != s.reason {
					t.Errorf("step %d: reason %q, want %q", i, st.Reason, s.reason)
				}
				if changed && !st.Since.Equal(at(s.at)) {
					t.Errorf("step %d: since %v, want t=%d", i, st.Since, s.at)
				}
			}
		})
	}
}

// TestReasonAfterFirstAnswer: a target starts in service with "not pinged
// yet"; the first answer keeps it in service and so flips nothing, but the
// reason must say what was heard from then on, while Since stays at the
// start, since the status never changed.
func TestReasonAfterFirstAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		rules Rules
		ev    func(*Target) bool
		want  string
	}{
		{"200, no lists", Rules{}, func(tg *Target) bool { return tg.PingResponse(at(1), 200, 0) }, "OPTIONS answered 200"},
		{"200 on the in-service list", Rules{InService: []int{200}}, func(tg *Target) bool { return tg.PingResponse(at(1), 200, 0) },
			"OPTIONS answered 200 (in-service list)"},
		{"100, no lists", Rules{}, func(tg *Target) bool { return tg.PingResponse(at(1), 100, 0) }, "OPTIONS answered 100"},
		{"a request", Rules{}, func(tg *Target) bool { return tg.RequestSeen(at(1)) }, "request from agent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, tg := range []*Target{NewTarget(c.rules, t0), RestoreTarget(c.rules, NewTarget(c.rules, t0).Status())} {
				tg.PingSent(at(0))
				if c.ev(tg) {
					t.Error("an answer to an in-service target reported a flip")
				}
				st := tg.Status()
				if !st.InService || st.Reason != c.want || !st.Since.Equal(t0) {
					t.Errorf("after the first answer: in %v reason %q since %v; want in service, %q, since t0", st.InService, st.Reason, st.Since, c.want)
				}
				// Later answers that keep it in service leave the reason of
				// the first, as they leave the reason of any flip.
				tg.PingResponse(at(2), 200, 0)
				if st := tg.Status(); st.Reason != c.want {
					t.Errorf("after a second answer: reason %q, want %q", st.Reason, c.want)
				}
			}
		})
	}
	// A failure short of ping-failure-count decides nothing: the target is
	// still in service on trust.
	tg := NewTarget(Rules{FailureCount: 2}, t0)
	tg.PingSent(at(0))
	tg.PingTimeout(at(5))
	if st := tg.Status(); st.Reason != "not pinged yet" {
		t.Errorf("after one of two failures: reason %q, want %q", st.Reason, "not pinged yet")
	}
}
