package peers

import (
	"net/netip"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The dispatcher bed: a carrier's proxy, Kamailio with its dispatcher
// module, in the box, routing every call to vendor A first and hunting
// to vendor B when A answers 5xx or times out; the vendors (sipp UAS)
// and the caller (sipp UAC) in the peer. Every INVITE the proxy sends a
// vendor leaves through the box's interface, where a filter's egress
// program sits.
var (
	dispProxy   = netip.AddrPortFrom(netip.MustParseAddr(harness.BoxIP), 5060)
	dispVendorA = netip.AddrPortFrom(netip.MustParseAddr(harness.AgentIP), 5060)
	dispVendorB = netip.AddrPortFrom(netip.MustParseAddr(harness.StrangerIP), 5060)
	dispCaller  = netip.MustParseAddrPort("192.0.2.4:5070")
)

// dispBed is the testbed with the caller's address on the peer's side;
// the vendors' two SipTestbed has put there already.
func dispBed(t *testing.T) *harness.Testbed {
	testenv.RequireTool(t, "kamailio", "kamailio")
	testenv.RequireTool(t, "sipp", "sip-tester")
	tb := harness.SipTestbed(t)
	testenv.Addr(t, tb.Peer, tb.PeerIfc, dispCaller.Addr().String()+"/24")
	return tb
}

// TestDispatcherHuntsOn503 validates the bed without a filter: vendor A
// answers every INVITE 503, so each of 50 calls at 10 a second, held 1 s,
// goes to A first, is hunted to B and completes there.
func TestDispatcherHuntsOn503(t *testing.T) {
	tb := dispBed(t)
	a := testenv.StartVendor(t, tb.Peer, dispVendorA, "vendor-uas-503")
	b := testenv.StartVendor(t, tb.Peer, dispVendorB, "vendor-uas")
	d := testenv.StartDispatcher(t, tb.Box, dispProxy, []netip.AddrPort{dispVendorA, dispVendorB})
	const calls = 50
	c := testenv.StartCaller(t, tb.Peer, dispCaller, dispProxy, testenv.CallerOptions{
		Rate: 10, Calls: calls, Hold: time.Second, RecvTimeout: 10 * time.Second})
	r := c.Wait(60 * time.Second)
	t.Logf("caller: %v", r)
	if r.Err != nil || r.Successful != calls || r.Failed != 0 || len(r.Calls) != calls {
		t.Errorf("want %d calls completed: %v", calls, r)
	}

	traces := d.Calls()
	for _, tr := range traces {
		if tr.Final != nil {
			t.Errorf("the proxy gave up on call %s: %+v", tr.CallID, tr.Final)
		}
	}

	var setups, huntDelays []time.Duration
	for _, call := range r.Calls {
		if call.Setup() < 0 {
			t.Errorf("call %s: no 200", call.CallID)
			continue
		}
		setups = append(setups, call.Setup())
		tr := traces[call.CallID]
		if tr == nil || len(tr.Relays) != 2 || tr.Relays[0].Dest != dispVendorA || tr.Relays[1].Dest != dispVendorB {
			t.Errorf("call %s: want relayed to A then B, got %+v", call.CallID, tr)
			continue
		}
		if len(tr.Hunts) != 1 || tr.Hunts[0].Code != 503 {
			t.Errorf("call %s: want one hunt on 503, got %+v", call.CallID, tr.Hunts)
		}
		if len(tr.Replies) != 2 || tr.Replies[0].From != dispVendorA || tr.Replies[0].Code != 503 ||
			tr.Replies[1].From != dispVendorB || tr.Replies[1].Code != 200 {
			t.Errorf("call %s: want 503 from A then 200 from B, got %+v", call.CallID, tr.Replies)
			continue
		}
		// A's 503 reaching the proxy to the INVITE to B.
		huntDelays = append(huntDelays, tr.HuntDelay())
	}
	if len(traces) != calls {
		t.Errorf("the proxy logged %d calls, want %d", len(traces), calls)
	}

	invA, invB := a.Invites(), b.Invites()
	if len(invA) != calls || len(invB) != calls {
		t.Errorf("INVITEs received: A %d, B %d; want %d each", len(invA), len(invB), calls)
	}
	if s := a.StrayACKs(); len(s) != 0 {
		t.Errorf("A received %d ACKs for transactions it never saw: %+v", len(s), s)
	}
	t.Logf("setup time at the caller: median %v, max %v (%d answered)",
		testenv.Quantile(setups, 0.5), testenv.Quantile(setups, 1), len(setups))
	t.Logf("hunt delay at the proxy (A's 503 in to INVITE out to B): median %v, max %v",
		testenv.Quantile(huntDelays, 0.5), testenv.Quantile(huntDelays, 1))
	t.Logf("INVITEs a second from the caller's start: A %v, B %v",
		a.InvitesPerSecond(c.Start), b.InvitesPerSecond(c.Start))
}
