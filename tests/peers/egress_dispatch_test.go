package peers

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/sipd"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// Egress admission against the real proxy (docs/design.md, "Egress
// admission"): the filter sits on the interface Kamailio sends its
// INVITEs to the vendors from, and answers on vendor A's behalf those it
// refuses; Kamailio's dispatcher, hunting to B on 5xx, is the oracle that
// the answer is taken for A's.

// egressConfig is the daemon's file: the proxy's realm, and vendor A as a
// session agent with agentKeys.
func egressConfig(tb *harness.Testbed, agentKeys string) string {
	return harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\n" +
		"cpu: {sample-interval: 200ms}\nsip-t1: 50ms\n" +
		"realms: [{name: core, address: " + harness.BoxIP + "}]\n" +
		"session-agents:\n  - {name: vendor-a, hostname: " + harness.AgentIP + ", realm-id: core" + agentKeys + "}\n"
}

// egressRejects are the daemon's reject records of the egress, by reason.
func egressRejects(t *testing.T, tb *harness.Testbed) map[string]uint64 {
	t.Helper()
	return rejectsWhere(t, tb, func(l api.RejectLine) bool {
		return l.Interface == "egress" && l.Source == harness.AgentIP && l.Class == "sip-invite"
	})
}

// rejectsWhere sums the daemon's reject records that keep holds, by
// reason.
func rejectsWhere(t *testing.T, tb *harness.Testbed, keep func(api.RejectLine) bool) map[string]uint64 {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "show", "rejects", "-o", "json")
	if err != nil {
		t.Fatalf("show rejects: %v: %s", err, stderr)
	}
	got := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var l api.RejectLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("show rejects -o json: %v\n%s", err, line)
		}
		if keep(l) {
			got[l.Reason] += l.Count
		}
	}
	return got
}

// hunted are the calls of a run that Kamailio relayed to A, then to B,
// and the time from its INVITE to A to its INVITE to B.
func hunted(t *testing.T, d *testenv.Dispatcher) (n int, took []time.Duration) {
	for _, tr := range d.Calls() {
		if len(tr.Relays) == 2 && tr.Relays[0].Dest == dispVendorA && tr.Relays[1].Dest == dispVendorB {
			n++
			took = append(took, tr.Relays[1].At.Sub(tr.Relays[0].At))
		}
	}
	return n, took
}

// TestConnectionCPSHunts: vendor A is a connection of 5 calls a second;
// 20 calls a second for 20 s through the proxy all complete, A receives
// no more than its rate and burst allow, and every call over it is
// hunted to B at once: the filter's 503, from A's address, is what
// Kamailio hunts on. A never sees the ACKs of those 503s.
func TestConnectionCPSHunts(t *testing.T) {
	tb := dispBed(t)
	a := testenv.StartVendor(t, tb.Peer, dispVendorA, "vendor-uas")
	b := testenv.StartVendor(t, tb.Peer, dispVendorB, "vendor-uas")
	// A's pings are not what this test is about: pass keeps INVITEs
	// toward it judged by the connection limit alone.
	tb.StartDaemon(t, harness.WriteConfig(t, egressConfig(tb, ", connection-cps: 5, on-out-of-service: pass, ping-interval: 1h")))
	d := testenv.StartDispatcher(t, tb.Box, dispProxy, []netip.AddrPort{dispVendorA, dispVendorB})
	const rate, seconds = 20, 20
	c := testenv.StartCaller(t, tb.Peer, dispCaller, dispProxy, testenv.CallerOptions{
		Rate: rate, Calls: rate * seconds, Hold: time.Second, RecvTimeout: 10 * time.Second})
	r := c.Wait(90 * time.Second)
	if r.Err != nil || r.Successful != rate*seconds || r.Failed != 0 {
		t.Fatalf("want all %d calls completed: %v", rate*seconds, r)
	}
	invA, perSecond := a.Invites(), a.InvitesPerSecond(c.Start)
	// GCRA at 5 a second with a burst of 5: within any span of s seconds
	// at most 5 s + 5.
	if len(invA) > 0 {
		span := invA[len(invA)-1].At.Sub(invA[0].At).Seconds()
		if limit := 5*span + 5; float64(len(invA)) > limit+0.5 {
			t.Errorf("A received %d INVITEs over %.1f s: more than 5 a second and its burst (%.0f)", len(invA), span, limit)
		}
	}
	for i, n := range perSecond {
		if n > 5+5 {
			t.Errorf("A received %d INVITEs in second %d: more than its rate and burst", n, i)
		}
	}
	if len(invA) < 5*seconds*9/10 {
		t.Errorf("A received %d INVITEs in %d s: the limit of 5 a second held it below its rate", len(invA), seconds)
	}
	n, took := hunted(t, d)
	if n != rate*seconds-len(invA) {
		t.Errorf("%d calls hunted to B, want the %d A did not get", n, rate*seconds-len(invA))
	}
	if len(b.Invites()) != n {
		t.Errorf("B received %d INVITEs, want the %d hunted", len(b.Invites()), n)
	}
	if got := egressRejects(t, tb)["connection"]; got != uint64(n) {
		t.Errorf("reject records of reason connection count %d, want the %d hunted", got, n)
	}
	var setups []time.Duration
	for _, call := range r.Calls {
		setups = append(setups, call.Setup())
	}
	t.Logf("A received %d INVITEs (%v a second), B %d; %d hunted", len(invA), perSecond, len(b.Invites()), n)
	t.Logf("INVITE to A → INVITE to B at the proxy: median %v, max %v; setup time at the caller: median %v, max %v",
		testenv.Quantile(took, 0.5), testenv.Quantile(took, 1), testenv.Quantile(setups, 0.5), testenv.Quantile(setups, 1))
	// The proxy ACKs each 503 toward A, which never had the transaction:
	// the filter drops those ACKs.
	if n := len(a.StrayACKs()); n != 0 {
		t.Errorf("A received %d ACKs of transactions it never had", n)
	}
}

// TestAgentDownFailsFast: vendor A answers its OPTIONS pings 503, so it
// goes out of service; then every INVITE the proxy sends toward it is
// answered on its behalf and hunted to B, none reaches A, and no call
// waits for Timer B: the proxy hunts each on a 503 from A's address, where
// a timed-out branch would have no reply and hunt on the proxy's own 408.
func TestAgentDownFailsFast(t *testing.T) {
	tb := dispBed(t)
	a := testenv.StartVendor(t, tb.Peer, dispVendorA, "options-503")
	b := testenv.StartVendor(t, tb.Peer, dispVendorB, "vendor-uas")
	tb.StartDaemon(t, harness.WriteConfig(t, egressConfig(tb,
		", ping-interval: 1s, ping-send-mode: continuous, out-service-response-codes: [503]")))
	took := tb.WaitStatus(t, harness.AgentIP, false, time.Minute)
	t.Logf("A out of service %v after the daemon started", took)
	d := testenv.StartDispatcher(t, tb.Box, dispProxy, []netip.AddrPort{dispVendorA, dispVendorB})
	const calls = 20
	c := testenv.StartCaller(t, tb.Peer, dispCaller, dispProxy, testenv.CallerOptions{
		Rate: 10, Calls: calls, Hold: 500 * time.Millisecond, RecvTimeout: 10 * time.Second})
	r := c.Wait(60 * time.Second)
	if r.Err != nil || r.Successful != calls || r.Failed != 0 {
		t.Fatalf("want all %d calls completed: %v", calls, r)
	}
	if got := len(a.Invites()); got != 0 {
		t.Errorf("A, out of service, received %d INVITEs", got)
	}
	n, hunts := hunted(t, d)
	if n != calls || len(b.Invites()) != calls {
		t.Errorf("%d calls hunted, B received %d INVITEs; want all %d", n, len(b.Invites()), calls)
	}
	if got := egressRejects(t, tb)["agent-down"]; got != calls {
		t.Errorf("reject records of reason agent-down count %d, want %d", got, calls)
	}
	traces := d.Calls()
	for _, call := range r.Calls {
		tr := traces[call.CallID]
		if tr == nil || len(tr.Hunts) != 1 || tr.Hunts[0].Code != 503 ||
			len(tr.Replies) == 0 || tr.Replies[0].From != dispVendorA || tr.Replies[0].Code != 503 {
			t.Errorf("call %s: want hunted on a 503 from A, got %+v", call.CallID, tr)
		}
	}
	var setups []time.Duration
	for _, call := range r.Calls {
		setups = append(setups, call.Setup())
	}
	t.Logf("INVITE to A → INVITE to B at the proxy: median %v, max %v (Timer B without the filter: 32 s); setup time at the caller: median %v, max %v",
		testenv.Quantile(hunts, 0.5), testenv.Quantile(hunts, 1), testenv.Quantile(setups, 0.5), testenv.Quantile(setups, 1))
}

// vendorResponder is vendor A as a plain UDP socket: it answers OPTIONS
// 200 and INVITE 503, each built from the request.
func vendorResponder(t *testing.T, ns string, at netip.AddrPort) {
	respond(t, ns, at, func(req *sip.Request) []byte {
		if req.Method == sip.OPTIONS {
			return []byte(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil).String())
		}
		resp, err := sipd.Reject([]byte(req.String()), 503, 0, "")
		if err != nil {
			return nil
		}
		return resp
	})
}

// TestForged503LeavesAgentInService: vendor A answers its pings 200 and
// is in service (keep-alive pings: in continuous mode only pings decide).
// A 503 to an INVITE, from A's address and port to the server's, that
// answers no INVITE the server sent leaves it in service, however many;
// A's 503 to an INVITE the server did send takes it out. That one comes
// after the forged ones, the same way, so once it has taken A out the
// forged ones have done whatever they would: A went out only then, and
// their Retry-After of an hour would have kept it out before.
func TestForged503LeavesAgentInService(t *testing.T) {
	tb := dispBed(t)
	vendorResponder(t, tb.Peer, dispVendorA)
	dm := tb.StartDaemon(t, harness.WriteConfig(t, egressConfig(tb,
		", ping-interval: 1s, out-service-response-codes: [503]")))
	tb.WaitStatus(t, harness.AgentIP, true, time.Minute)
	agent, box := netip.MustParseAddr(harness.AgentIP), netip.MustParseAddr(harness.BoxIP)
	invite := func(id string) string {
		return "INVITE sip:callee@" + harness.AgentIP + " SIP/2.0\r\nVia: SIP/2.0/UDP " + harness.BoxIP + ":5060;branch=z9hG4bK-" + id + "\r\n" +
			"Max-Forwards: 70\r\nFrom: <sip:caller@" + harness.BoxIP + ">;tag=1\r\nTo: <sip:callee@" + harness.AgentIP + ">\r\n" +
			"Call-ID: " + id + "@" + harness.BoxIP + "\r\nCSeq: 1 INVITE\r\nContact: <sip:caller@" + harness.BoxIP + ">\r\nContent-Length: 0\r\n\r\n"
	}
	forged, err := sipd.Reject([]byte(invite("forged")), 503, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{Frame(Ether{}, IPv4{Src: agent, Dst: box}, UDP{Src: 5060, Dst: 5060}, Raw(forged))})
	}
	testenv.WaitFor(t, func() bool { return strings.Count(dm.Log.String(), "answers no INVITE the server sent") >= 3 })
	// The server's own INVITE, from its SIP port, goes out through the
	// egress program; A answers it 503, which takes A out.
	server := harness.ListenUDP(t, tb.Box, dispProxy.String())
	sent := time.Now()
	if _, err := server.WriteToUDPAddrPort([]byte(invite("real")), dispVendorA); err != nil {
		t.Fatal(err)
	}
	took := tb.WaitStatus(t, harness.AgentIP, false, time.Minute)
	t.Logf("A's 503 to the server's INVITE took it out of service in %v", took)
	for _, r := range tb.AgentTargets(t) {
		if r.Status.Since.Before(sent) {
			t.Errorf("A went out of service at %v, before the server's INVITE at %v: a forged 503 took it out: %+v", r.Status.Since, sent, r)
		}
	}
}
