package fastpath

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestTrustedFirst: strangers fill a shared bucket only down to its
// reserve; a session agent's calls take the reserve, and once the bucket
// refills above it the agent still goes first while strangers wait. The
// class and the environment behave alike, and the cap holds for all.
func TestTrustedFirst(t *testing.T) {
	for _, level := range []int{int(cac.SIPInvite), policy.LevelEnvironment} {
		t.Run(map[int]string{int(cac.SIPInvite): "class", policy.LevelEnvironment: "environment"}[level], func(t *testing.T) {
			f := harness.NewFastPath(t, false)
			var p policy.Policy
			p.Levels[level] = harness.MustRate(t, 1, 10)
			p.ReserveNS[level] = 3 * second // three calls of the ten
			p.Agents = []policy.Agent{{}}
			f.SetPolicy(t, p)
			f.SetAgentAddrs(t, map[netip.Addr]int{agentAddr: 0})
			reason := cac.ReasonClass
			if level == policy.LevelEnvironment {
				reason = cac.ReasonEnvironment
			}
			f.MustAt(t, 100*second)
			if passed, reasons := f.OfferCalls(t, invitesFrom(strangerAddr), 20); passed != 7 || reasons[reason] != 13 {
				t.Errorf("strangers on a full bucket: %d of 20 passed (%v), want 7", passed, reasons)
			}
			if passed, reasons := f.OfferCalls(t, invitesFrom(agentAddr), 5); passed != 3 || reasons[reason] != 2 {
				t.Errorf("the agent on the reserve: %d of 5 passed (%v), want 3", passed, reasons)
			}
			// One call refills: below the reserve, so it is the agent's.
			f.MustAt(t, 101*second)
			if passed, _ := f.OfferCalls(t, invitesFrom(strangerAddr), 3); passed != 0 {
				t.Errorf("a stranger took %d calls of a bucket below its reserve", passed)
			}
			if passed, _ := f.OfferCalls(t, invitesFrom(agentAddr), 3); passed != 1 {
				t.Errorf("the agent got %d of the one call refilled, want 1", passed)
			}
			// Four refill: three go back to the reserve, one is a stranger's.
			f.MustAt(t, 105*second)
			if passed, _ := f.OfferCalls(t, invitesFrom(strangerAddr), 5); passed != 1 {
				t.Errorf("strangers got %d calls after four refilled over an empty reserve, want 1", passed)
			}
			if passed, _ := f.OfferCalls(t, invitesFrom(agentAddr), 5); passed != 3 {
				t.Errorf("the agent got %d calls of the reserve, want 3", passed)
			}
		})
	}
}

// TestInDialogHeld: requests that claim a dialog are held by the
// sip-indialog per-source bucket of a stranger, never of an agent, and
// count in their class; a malformed frame is held by either of its two
// buckets for reason malformed, and within them follows malformed: drop.
func TestInDialogHeld(t *testing.T) {
	f := harness.NewFastPath(t, true)
	var p policy.Policy
	p.PerSource[cac.SIPInDialog] = policy.PerSource{Limit: harness.MustRate(t, 1, 4), Key: policy.SourceIP, IPv6Prefix: 64}
	p.PerSource[cac.ClassMalformed] = policy.PerSource{Limit: harness.MustRate(t, 1, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	p.Levels[cac.ClassMalformed] = harness.MustRate(t, 1, 3)
	p.Levels[policy.LevelEnvironment] = harness.MustRate(t, 1, 1) // not theirs
	p.Agents = []policy.Agent{{Limit: harness.MustRate(t, 1, 1)}}
	f.SetPolicy(t, p)
	f.SetAgentAddrs(t, map[netip.Addr]int{agentAddr: 0})
	f.MustAt(t, 7*second)

	invented := func(src netip.Addr) []byte {
		return Frame(Ether{}, IPv4{Src: src}, UDP{Dst: 5060}, SIPRequest("BYE", harness.ToTag))
	}
	if passed, reasons := f.Offer(t, invented(strangerAddr), 10); passed != 4 || reasons[cac.ReasonSource] != 6 {
		t.Errorf("a stranger's invented To tags: %d of 10 passed (%v), want 4, then source", passed, reasons)
	}
	if passed, reasons := f.Offer(t, invented(agentAddr), 10); passed != 10 {
		t.Errorf("an agent's in-dialog requests: %d of 10 passed (%v), want all", passed, reasons)
	}
	st := f.Stats(t)
	if got := st.Classes[cac.SIPInDialog]; got.Admitted != 14 || got.Rejected[cac.ReasonSource] != 6 {
		t.Errorf("sip-indialog counted %+v, want 14 admitted and 6 rejected by source", got)
	}

	short := func(src netip.Addr) []byte { // a first fragment too short to show the method
		return Frame(Ether{}, IPv4{Src: src, MF: true}, UDP{Dst: 5060, Len: 900}, Raw("INV"))
	}
	if passed, reasons := f.Offer(t, short(strangerAddr), 5); passed != 2 || reasons[cac.ReasonMalformed] != 3 {
		t.Errorf("malformed from one source: %d of 5 within the limits (%v), want 2, then malformed", passed, reasons)
	}
	if passed, reasons := f.Offer(t, short(agentAddr), 5); passed != 1 || reasons[cac.ReasonMalformed] != 4 {
		t.Errorf("malformed from another: %d of 5 within the limits (%v), want the 1 left in all", passed, reasons)
	}
	if got := f.Stats(t).Classes[cac.ClassMalformed]; got.Admitted != 3 || got.Rejected[cac.ReasonMalformed] != 7 {
		t.Errorf("malformed counted %+v, want 3 within the limits and 7 rejected", got)
	}
}

// TestDialogVerified: the in-dialog requests of a dialog whose INVITE the
// filter admitted pass uncharged, however many; those of a Call-ID it
// never admitted, the same To tag and all, are held by the sip-indialog
// bucket; a refused INVITE opens no dialog.
func TestDialogVerified(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.PerSource[cac.SIPInDialog] = policy.PerSource{Limit: harness.MustRate(t, 1, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	f.SetPolicy(t, p)
	f.MustAt(t, 9*second)
	call := func(method, callID, to string) []byte {
		s := SIPRequest(method, to)
		for i, h := range s.Headers {
			if strings.HasPrefix(h, "Call-ID:") {
				s.Headers[i] = "i: " + callID // compact, as some do
			}
		}
		return Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Dst: 5060}, s)
	}
	if passed, _ := f.Offer(t, call("INVITE", "dialog-1@198.51.100.1", harness.ToNoTag), 1); passed != 1 {
		t.Fatal("the first INVITE was refused")
	}
	if passed, reasons := f.Offer(t, call("INVITE", "dialog-2@198.51.100.1", harness.ToNoTag), 1); passed != 0 {
		t.Fatalf("the second INVITE passed a per-source bucket of one (%v)", reasons)
	}
	if passed, _ := f.Offer(t, call("BYE", "dialog-1@198.51.100.1", harness.ToTag), 20); passed != 20 {
		t.Errorf("the admitted dialog's requests: %d of 20 passed, want all, uncharged", passed)
	}
	for _, id := range []string{"dialog-2@198.51.100.1", "invented@198.51.100.1"} {
		if passed, reasons := f.Offer(t, call("BYE", id, harness.ToTag), 5); passed != 2 || reasons[cac.ReasonSource] != 3 {
			t.Errorf("requests of %s, a dialog never admitted: %d of 5 passed (%v), want 2, then source", id, passed, reasons)
		}
		f.MustAt(t, f.Now+10*second) // the in-dialog bucket refills
	}
	if st := f.Stats(t); st.SIPInDialogVerified != 20 {
		t.Errorf("%d in-dialog requests counted verified, want 20", st.SIPInDialogVerified)
	}
}
