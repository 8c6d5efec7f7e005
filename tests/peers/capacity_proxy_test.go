package peers

import (
	"encoding/json"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// limitsInForce is what show limits -o json says.
func limitsInForce(t *testing.T, tb *harness.Testbed) maps.LimitsView {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "show", "limits", "-o", "json")
	if err != nil {
		t.Fatalf("show limits: %v: %s", err, stderr)
	}
	var v maps.LimitsView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show limits -o json: %v\n%s", err, out)
	}
	return v
}

// accountSessions is what show limits says the first account's
// max-sessions is and holds.
func accountSessions(t *testing.T, tb *harness.Testbed) maps.SessionsView {
	t.Helper()
	v := limitsInForce(t, tb)
	if len(v.Accounts) == 0 {
		t.Fatalf("show limits: no account: %+v", v)
	}
	return v.Accounts[0].Sessions
}

// mostAtOnce is the most intervals [start, start+d) that overlap.
func mostAtOnce(starts []time.Time, d time.Duration) int {
	type edge struct {
		at time.Time
		up int
	}
	var edges []edge
	for _, s := range starts {
		edges = append(edges, edge{s, 1}, edge{s.Add(d), -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].up < edges[j].up
		}
		return edges[i].at.Before(edges[j].at)
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.up
		most = max(most, n)
	}
	return most
}

// TestCapacityBehindProxy: Kamailio's dispatcher sends the calls of an
// account of max-sessions 2 to vendor A, which answers every INVITE 503,
// and hunts each to vendor B. A's 503 carries the call's Call-ID and
// comes in through the filter, but the call goes on: only the proxy's
// own answer to the caller says what became of it, so the 503 must not
// give the account's session back. One call a second, each held 3.5 s:
// the first two are up when the third and fourth come, which are refused
// for capacity; the fifth and sixth find the first two hung up.
func TestCapacityBehindProxy(t *testing.T) {
	tb := dispBed(t)
	testenv.StartVendor(t, tb.Peer, dispVendorA, "vendor-uas-503")
	b := testenv.StartVendor(t, tb.Peer, dispVendorB, "vendor-uas")
	tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"classes:\n  sip-invite: {action: reject}\n"+
		"customers:\n  - {name: callers, accounts: [{name: trunk, source: "+dispCaller.Addr().String()+"/32, max-sessions: 2}]}\n"))
	testenv.StartDispatcher(t, tb.Box, dispProxy, []netip.AddrPort{dispVendorA, dispVendorB})
	const hold = 3500 * time.Millisecond
	c := testenv.StartCaller(t, tb.Peer, dispCaller, dispProxy, testenv.CallerOptions{
		Rate: 1, Calls: 6, Hold: hold, RecvTimeout: 10 * time.Second})
	// Once the caller has two calls answered, both hunted after A's 503,
	// the account holds both sessions.
	if !testenv.Poll(time.Minute, 20*time.Millisecond, func() bool {
		up := 0
		for _, call := range c.Calls() {
			if !call.Answered.IsZero() {
				up++
			}
		}
		return up >= 2
	}) {
		t.Fatalf("the caller has not two calls answered a minute after it started: %+v", c.Calls())
	}
	mid := accountSessions(t, tb)
	r := c.Wait(60 * time.Second)
	var answered []time.Time
	for _, call := range r.Calls {
		if call.Setup() >= 0 {
			answered = append(answered, call.Answered)
		}
	}
	most := mostAtOnce(answered, hold)
	t.Logf("%d calls: %d completed, %d refused; at most %d up at once; B got %d INVITEs; the account held %d of %d",
		len(r.Calls), r.Successful, r.Failed, most, len(b.Invites()), mid.Held, mid.Max)
	if mid.Max != 2 || mid.Held != 2 {
		t.Errorf("with two calls up, show limits says the account holds %d of %d sessions, want 2 of 2", mid.Held, mid.Max)
	}
	if r.Successful != 4 || r.Failed != 2 || most != 2 {
		t.Errorf("%d calls completed and %d refused, %d up at once: want 4, 2 and 2 (A's 503 must not give a session back)",
			r.Successful, r.Failed, most)
	}
	if got := callerRejectsFrom(t, tb, dispCaller.Addr().String())["capacity"]; got != 2 {
		t.Errorf("capacity records count %d, want the 2 refused calls", got)
	}
	testenv.Poll(3*time.Second, 100*time.Millisecond, func() bool { return accountSessions(t, tb).Held == 0 })
	if end := accountSessions(t, tb); end.Held != 0 {
		t.Errorf("after every BYE the account holds %d sessions, want 0", end.Held)
	}
}

// TestConnectionMaxSessions: vendor A is a connection of max-sessions 2
// behind Kamailio's dispatcher. One call a second, each held 3.5 s: the
// INVITEs the proxy sends toward A while two calls are up there are
// refused at egress and answered 503 from A's address, and the proxy
// hunts them to B at once; the fifth and sixth find A's first two hung
// up. Every call completes, A never has more than 2, and A's part of
// each dialog gives its session back at the BYE.
func TestConnectionMaxSessions(t *testing.T) {
	tb := dispBed(t)
	a := testenv.StartVendor(t, tb.Peer, dispVendorA, "vendor-uas")
	b := testenv.StartVendor(t, tb.Peer, dispVendorB, "vendor-uas")
	tb.StartDaemon(t, harness.WriteConfig(t, egressConfig(tb, ", max-sessions: 2, on-out-of-service: pass, ping-interval: 1h")))
	d := testenv.StartDispatcher(t, tb.Box, dispProxy, []netip.AddrPort{dispVendorA, dispVendorB})
	const hold = 3500 * time.Millisecond
	c := testenv.StartCaller(t, tb.Peer, dispCaller, dispProxy, testenv.CallerOptions{
		Rate: 1, Calls: 6, Hold: hold, RecvTimeout: 10 * time.Second})
	r := c.Wait(60 * time.Second)
	if r.Err != nil || r.Successful != 6 {
		t.Fatalf("want all 6 calls completed: %v", r)
	}
	var atA []time.Time
	for _, e := range a.Invites() {
		atA = append(atA, e.At)
	}
	n, took := hunted(t, d)
	t.Logf("A received %d INVITEs, at most %d calls up at once; B %d; %d hunted, INVITE to A → INVITE to B median %v",
		len(atA), mostAtOnce(atA, hold), len(b.Invites()), n, testenv.Quantile(took, 0.5))
	if len(atA) != 4 || mostAtOnce(atA, hold) != 2 || n != 2 || len(b.Invites()) != 2 {
		t.Errorf("A got %d INVITEs (%d at once), B %d, %d hunted: want 4 (2), 2, 2", len(atA), mostAtOnce(atA, hold), len(b.Invites()), n)
	}
	if got := egressRejects(t, tb)["capacity"]; got != 2 {
		t.Errorf("egress reject records of reason capacity count %d, want the 2 hunted", got)
	}
	if n := len(a.StrayACKs()); n != 0 {
		t.Errorf("A received %d ACKs of transactions it never had", n)
	}
	agentHeld := func() maps.SessionsView {
		v := limitsInForce(t, tb)
		if len(v.Agents) == 0 {
			t.Fatalf("show limits: no session agent: %+v", v)
		}
		return v.Agents[0].Sessions
	}
	testenv.Poll(3*time.Second, 100*time.Millisecond, func() bool { return agentHeld().Held == 0 })
	if s := agentHeld(); s.Max != 2 || s.Held != 0 {
		t.Errorf("after every BYE agent A holds %d of %d sessions, want 0 of 2", s.Held, s.Max)
	}
}
