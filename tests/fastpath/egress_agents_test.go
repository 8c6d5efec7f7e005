package fastpath

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// tcActShot is TC_ACT_SHOT (tcx's TCX_DROP) as a run returns it.
const tcActShot = 2

// egressAgents are three session agents as egress admission sees them:
// a connection of 5 cps (burst 5) that fails fast, an agent that fails
// fast with no connection limit, and a connection of 2 cps (burst 1)
// whose INVITEs pass while it is out of service.
func egressAgents(t testing.TB) policy.Policy {
	var p policy.Policy
	p.Agents = []policy.Agent{
		{Connection: harness.MustRate(t, 5, 5), FailFast: true, OutCodes: []int{503}},
		{FailFast: true, OutCodes: []int{503}},
		{Connection: harness.MustRate(t, 2, 1), OutCodes: []int{503}},
	}
	return p
}

var egressAgentAddrs = []netip.Addr{
	netip.MustParseAddr("198.51.100.30"), netip.MustParseAddr("2001:db8::31"), netip.MustParseAddr("198.51.100.32"),
}

// inviteTo is an INVITE the server sends toward dst, of transaction n.
func inviteTo(dst netip.Addr, n int, s SIP) []byte { return callTo(dst, n, fmt.Sprint(n), s) }

// callTo is a request of call n the server sends toward dst, in the
// transaction of the branch.
func callTo(dst netip.Addr, n int, branch string, s SIP) []byte {
	s = s.With("Call-ID", fmt.Sprintf("out-%d@192.0.2.10", n)).With("Via", "SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-"+branch)
	if dst.Is4() {
		return Frame(Ether{}, IPv4{Src: serverAddr, Dst: dst}, UDP{Src: 5060, Dst: 5060}, s)
	}
	return Frame(Ether{}, IPv6{Src: serverAddr6, Dst: dst}, UDP{Src: 5060, Dst: 5060}, s)
}

// judge runs a frame going out through the egress program and the model,
// and fails unless both do the same with it; a refused one must be handed
// up as the model says.
func (e *egress) judge(t *testing.T, f *harness.FastPath, rd *ringbuf.Reader, frame []byte) admission.EgressVerdict {
	t.Helper()
	ret, err := e.objs.TcDialogs.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		t.Fatal(err)
	}
	want := f.Model.Egress(append([]byte(nil), frame...), f.Now)
	if got := ret == tcActShot; got != want.Refused || (ret != tcActShot && ret != tcActUnspec) {
		t.Fatalf("egress returned %d; the model: %+v", int32(ret), want)
	}
	if want.Refused && !want.ACK {
		ev := readSIPEvent(t, rd)
		for ev.Kind == maps.SIPSession { // a message of a dialog that holds sessions, before
			ev = readSIPEvent(t, rd)
		}
		if ev.Kind != maps.SIPEgressRefused || int(ev.Agent) != want.Agent || cac.EgressReason(ev.Code) != want.Reason ||
			ev.Dst.Addr().Unmap() != egressAgentAddrs[want.Agent] || string(ev.Message) != string(frame[len(frame)-len(ev.Message):]) {
			t.Fatalf("refused INVITE handed up as %+v; the model: %+v", ev, want)
		}
	}
	return want
}

// TestEgressAdmission: a random trace of INVITEs the server sends toward
// three agents and a stranger, new ones, retransmissions, and the ACKs of
// their final answers (of refused ones too), new transactions of calls
// sent before (which are no copies: they take a token), with agents going out of
// service and back, over a clock that moves by up to 75 ms a step. The
// egress program and the model refuse the same INVITEs for the same
// reasons, hand up each one refused, drop the same ACKs, and end with
// the same counters.
func TestEgressAdmission(t *testing.T) {
	f := harness.NewFastPath(t, false)
	e := newEgress(t, f)
	// Capacities too: the agent without a connection limit has 3
	// sessions, the slow connection 2, which its rate refuses past.
	p := egressAgents(t)
	p.Agents[1].MaxSessions, p.Agents[2].MaxSessions = 3, 2
	f.SetPolicy(t, p)
	addrs := map[netip.Addr]int{}
	for i, a := range egressAgentAddrs {
		addrs[a] = i
	}
	f.SetAgentAddrs(t, addrs)
	rd := sipEvents(t, f)

	rng := rand.New(rand.NewPCG(17, 2026))
	dests := append([]netip.Addr{netip.MustParseAddr("203.0.113.50")}, egressAgentAddrs...)
	forms := []SIP{SIPRequest("INVITE", harness.ToNoTag), SIPRequest("invite", harness.ToNoTag)}
	type sent struct {
		frame []byte
		dst   netip.Addr
		n     int
	}
	var past, refusedOnes []sent
	now := uint64(10 * time.Second)
	refused := map[cac.EgressReason]int{}
	for step := 0; step < 3000; step++ {
		now += uint64(rng.IntN(300)) * uint64(time.Millisecond) / 4
		f.MustAt(t, now)
		switch r := rng.IntN(100); {
		case r < 3: // an agent goes out of service, or comes back
			i, out := rng.IntN(len(egressAgentAddrs)), rng.IntN(2) == 0
			if err := maps.WriteAgentState(f.Objs.AgentState, uint32(i), out); err != nil {
				t.Fatal(err)
			}
			f.Model.SetAgentOut(i, out)
		case r < 20 && len(past) > 0: // a copy of an INVITE sent before
			e.judge(t, f, rd, past[rng.IntN(len(past))].frame)
		case r < 24 && len(past) > 0: // a new transaction of a call (after a 401, say): not a copy
			pick := past[rng.IntN(len(past))]
			again := forms[rng.IntN(len(forms))].With("CSeq", "314160 INVITE")
			if v := e.judge(t, f, rd, callTo(pick.dst, pick.n, fmt.Sprintf("again-%d", step), again)); v.Refused {
				refused[v.Reason]++
			}
		case r < 30 && len(f.Model.SessionDialogs()) > 0: // a dialog toward an agent ends, as the daemon sees it
			held := f.Model.SessionDialogs()
			slices.Sort(held)
			f.GiveBack(t, held[rng.IntN(len(held))])
		case r < 36 && len(refusedOnes)+len(past) > 0: // the server's ACK of a final answer
			pick := append(refusedOnes, past...)[rng.IntN(len(refusedOnes)+len(past))]
			ack := SIPRequest([]string{"ACK", "ack"}[rng.IntN(2)], harness.ToTag)
			e.judge(t, f, rd, inviteTo(pick.dst, pick.n, ack))
		default:
			dst := dests[rng.IntN(len(dests))]
			frame := inviteTo(dst, step, forms[rng.IntN(len(forms))])
			if v := e.judge(t, f, rd, frame); v.Refused {
				refused[v.Reason]++
				refusedOnes = append(refusedOnes, sent{frame, dst, step})
			} else {
				past = append(past, sent{frame, dst, step})
			}
		}
		for i := range egressAgentAddrs {
			l := maps.AgentSessions(uint32(i))
			if got, want := f.SessionsHeld(t, l), f.Model.SessionsHeld(l); got != want {
				t.Fatalf("step %d: agent %d holds %d sessions, the model %d", step, i, got, want)
			}
		}
	}
	got, err := maps.ReadEgressCounts(f.Objs.EgressCounts, len(egressAgentAddrs))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		w := f.Model.EgressCountsOf(i)
		if g.Invites != w.Invites || g.Retransmits != w.Retransmits || g.Refused != w.Refused || g.Unanswered != w.Unanswered || g.ACKs != w.ACKs {
			t.Errorf("agent %d: the program counted %+v, the model %+v", i, g, w)
		}
	}
	// The trace must have tried every decision.
	if refused[cac.EgressConnection] == 0 || refused[cac.EgressAgentDown] == 0 || refused[cac.EgressCapacity] == 0 ||
		got[0].Retransmits == 0 || got[0].ACKs == 0 {
		t.Errorf("the trace refused %v and saw %d retransmissions and %d ACKs of refusals: it tried too little", refused, got[0].Retransmits, got[0].ACKs)
	}
	t.Logf("refused %v; counters %+v", refused, got)
}

// TestEgressAnswersSent: an agent's 503 to an INVITE the server sent it is
// handed up as answering it, whatever the agent added to the top Via; a
// 503 with a Call-ID the server never sent, one from another agent with
// the Call-ID of an INVITE sent to the first, one to an INVITE the egress
// program refused, and one after Timer B, as answering nothing. The model
// agrees.
func TestEgressAnswersSent(t *testing.T) {
	f := harness.NewFastPath(t, false)
	e := newEgress(t, f)
	f.SetPolicy(t, egressAgents(t))
	agent, other := egressAgentAddrs[2], egressAgentAddrs[0] // agent: 2 cps, burst 1
	f.SetAgentAddrs(t, map[netip.Addr]int{agent: 2, other: 0})
	rd := sipEvents(t, f)
	f.MustAt(t, 100*second)
	sentOne := inviteTo(agent, 1, SIPRequest("INVITE", harness.ToNoTag))
	if v := e.judge(t, f, rd, sentOne); v.Refused {
		t.Fatal("the first INVITE was refused")
	}
	if v := e.judge(t, f, rd, inviteTo(agent, 2, SIPRequest("INVITE", harness.ToNoTag))); !v.Refused {
		t.Fatal("the second INVITE within the burst of 1 went on")
	}
	answer := func(from netip.Addr, callID, params string) []byte {
		return Frame(Ether{}, IPv4{Src: from, Dst: serverAddr}, UDP{Src: 5060, Dst: 5060}, Raw(
			"SIP/2.0 503 Service Unavailable\r\nVia: SIP/2.0/UDP 192.0.2.10:5060"+params+"\r\n"+
				`From: "Alice" <sip:alice@example.com>;tag=1928301774`+"\r\nTo: "+harness.ToTag+"\r\n"+
				"Call-ID: "+callID+"\r\nCSeq: 314159 INVITE\r\nContent-Length: 0\r\n\r\n"))
	}
	for _, c := range []struct {
		name  string
		at    uint64
		agent int
		frame []byte
		sent  bool
	}{
		{"the answer to the INVITE sent", 101 * second, 2, answer(agent, "out-1@192.0.2.10", ";branch=z9hG4bK-1"), true},
		// The agent adds received and rport to the top Via (RFC 3261
		// §18.2.1, RFC 3581): the Call-ID stays.
		{"its Via with received and rport", 101 * second, 2, answer(agent, "out-1@192.0.2.10", ";branch=z9hG4bK-1;received=192.0.2.10;rport=5060"), true},
		{"a forged one: a Call-ID never sent", 101 * second, 2, answer(agent, "forged@192.0.2.10", ";branch=z9hG4bK-1"), false},
		{"a forged one: from another agent", 101 * second, 0, answer(other, "out-1@192.0.2.10", ";branch=z9hG4bK-1"), false},
		{"the answer to the INVITE refused", 101 * second, 2, answer(agent, "out-2@192.0.2.10", ";branch=z9hG4bK-2"), false},
		{"the answer after Timer B", 100*second + admission.TimerBNS, 2, answer(agent, "out-1@192.0.2.10", ";branch=z9hG4bK-1"), false},
	} {
		f.MustAt(t, c.at)
		if err := f.Check(c.frame); err != nil {
			t.Fatal(err)
		}
		ev := readSIPEvent(t, rd)
		model := f.Model.AnswersSent(c.frame[42:], c.agent, c.at)
		if ev.Kind != maps.SIPAgentResponse || int(ev.Agent) != c.agent || ev.Sent != c.sent || model != c.sent {
			t.Errorf("%s: handed up as %+v (agent %d, sent %v), the model says %v; want %v", c.name, ev.Kind, ev.Agent, ev.Sent, model, c.sent)
		}
	}
}
