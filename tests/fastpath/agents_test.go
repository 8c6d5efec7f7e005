package fastpath

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

var (
	agentAddr    = netip.MustParseAddr("198.51.100.7")
	strangerAddr = netip.MustParseAddr("203.0.113.9")
)

// invitesFrom is harness.InviteFrom as FastPath.OfferCalls takes it.
func invitesFrom(src netip.Addr) func(string) []byte {
	return func(callID string) []byte { return harness.InviteFrom(src, callID) }
}

func agentPolicy(t testing.TB) policy.Policy {
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	p.Agents = []policy.Agent{{Limit: harness.MustRate(t, 0.001, 3), OutCodes: []int{503}}}
	return p
}

// TestAgentLevel: a session agent is held by its own bucket (3 calls), not
// the per-source one (1 call) that holds a stranger; it is rejected as
// agent, and its requests are stamped whatever the verdict.
func TestAgentLevel(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, agentPolicy(t))
	f.SetAgentAddrs(t, map[netip.Addr]int{agentAddr: 0})
	f.MustAt(t, 42*second)
	if passed, reasons := f.OfferCalls(t, invitesFrom(agentAddr), 5); passed != 3 || reasons[cac.ReasonAgent] != 2 {
		t.Errorf("agent: %d of 5 passed, rejected %v; want 3, then agent", passed, reasons)
	}
	if passed, reasons := f.OfferCalls(t, invitesFrom(strangerAddr), 3); passed != 1 || reasons[cac.ReasonSource] != 2 {
		t.Errorf("stranger: %d of 3 passed, rejected %v; want 1, then source", passed, reasons)
	}
	seen, err := maps.ReadAgentSeen(f.Objs.AgentSeen, 1)
	if err != nil || seen[0] != 42*second {
		t.Errorf("the agent's last request: %v, %v; want the clock, %d", seen, err, 42*second)
	}
	// An in-dialog request is a request too.
	f.MustAt(t, 43*second)
	f.Offer(t, Frame(Ether{}, IPv4{Src: agentAddr}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToTag)), 1)
	if seen, _ := maps.ReadAgentSeen(f.Objs.AgentSeen, 1); seen[0] != 43*second {
		t.Errorf("after a re-INVITE the last request is %v, want %d", seen, 43*second)
	}
	// An address left in the table for an agent no longer configured is a
	// stranger.
	f.SetAgentAddrs(t, map[netip.Addr]int{agentAddr: 0, strangerAddr: 1})
	if _, reasons := f.OfferCalls(t, invitesFrom(strangerAddr), 1); reasons[cac.ReasonSource] != 1 {
		t.Errorf("an address of agent 1 of 1: rejected %v, want source", reasons)
	}
}

// TestSIPEvents: a response from an agent with a code on its out-service
// list, and a refused INVITE of a class with action reject, go to user
// sipEvents reads the program's SIP ring buffer until the test ends.
func sipEvents(t *testing.T, f *harness.FastPath) *ringbuf.Reader {
	t.Helper()
	rd, err := ringbuf.NewReader(f.Objs.SipEvents)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd
}

// space whole; other responses and strangers' do not.
func TestSIPEvents(t *testing.T) {
	f := harness.NewFastPath(t, false)
	p := agentPolicy(t)
	f.SetPolicy(t, p)
	f.SetAgentAddrs(t, map[netip.Addr]int{agentAddr: 0})
	if err := maps.WriteSettings(f.Objs.Settings, maps.Settings{Reject: [cac.NumClasses]bool{cac.SIPInvite: true}}); err != nil {
		t.Fatal(err)
	}
	rd := sipEvents(t, f)
	response := func(src netip.Addr, status string) []byte {
		return Frame(Ether{}, IPv4{Src: src}, UDP{Src: 5060, Dst: 5060},
			Raw("SIP/2.0 "+status+"\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"))
	}
	for _, frame := range [][]byte{
		response(agentAddr, "486 Busy Here"),           // not on the list
		response(strangerAddr, "503 Unavailable"),      // not an agent
		response(agentAddr, "5O3 Service Unavailable"), // not a code
	} {
		if err := f.Check(frame); err != nil {
			t.Fatal(err)
		}
	}
	want := response(agentAddr, "503 Service Unavailable")
	if err := f.Check(want); err != nil {
		t.Fatal(err)
	}
	ev := readSIPEvent(t, rd)
	if ev.Kind != maps.SIPAgentResponse || ev.Agent != 0 || ev.Code != 503 || ev.Src != netip.AddrPortFrom(agentAddr, 5060) ||
		string(ev.Message) != string(want[42:]) { // after Ethernet, IPv4 and UDP
		t.Errorf("agent response event: %+v", ev)
	}
	rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := rd.Read(); err == nil {
		t.Error("an event for a response that is not an agent's out-service one")
	}

	f.MustAt(t, 10*second)
	f.Offer(t, harness.InviteFrom(strangerAddr, "first@198.51.100.1"), 1) // admitted
	invite := harness.InviteFrom(strangerAddr, "second@198.51.100.1")
	f.Offer(t, invite, 1) // refused: to user space
	ev = readSIPEvent(t, rd)
	if ev.Kind != maps.SIPRejected || ev.Src.Addr() != strangerAddr || string(ev.Message) != string(invite[42:]) {
		t.Errorf("rejected INVITE event: %+v", ev)
	}
}

func readSIPEvent(t *testing.T, rd *ringbuf.Reader) maps.SIPEvent {
	t.Helper()
	rd.SetDeadline(time.Now().Add(time.Second))
	rec, err := rd.Read()
	if err != nil {
		t.Fatalf("no SIP event: %v", err)
	}
	ev, err := maps.DecodeSIPEvent(rec.RawSample)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestSIPEventsAfterCRLF: a refused INVITE with leading bytes (CR, LF, SP,
// HT, NUL, up to 1,500 of them) goes to user space with the ports of its
// UDP header, not of the bytes before the request line, and its message
// from the request line on; the 503 then
// goes from the port it was sent to, to the port it came from.
func TestSIPEventsAfterCRLF(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, agentPolicy(t))
	if err := maps.WriteSettings(f.Objs.Settings, maps.Settings{Reject: [cac.NumClasses]bool{cac.SIPInvite: true}}); err != nil {
		t.Fatal(err)
	}
	rd := sipEvents(t, f)
	f.MustAt(t, 10*second)
	for _, prefix := range []string{"\r\n", "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n", " \t\x00", strings.Repeat(" \r\n\t\x00", 300)} {
		s := SIPRequest("INVITE", harness.ToNoTag)
		s.Prefix = prefix
		invite := func(id string) []byte {
			return Frame(Ether{}, IPv4{Src: strangerAddr, Dst: agentAddr}, UDP{Src: 5070, Dst: 5080}, s.With("Call-ID", id+"@198.51.100.1"))
		}
		f.Offer(t, invite("first"+harness.Itoa(len(prefix))), 1) // admitted: the source's one call
		refused := invite("second" + harness.Itoa(len(prefix)))
		f.Offer(t, refused, 1)
		ev := readSIPEvent(t, rd)
		if ev.Src != netip.AddrPortFrom(strangerAddr, 5070) || ev.Dst != netip.AddrPortFrom(agentAddr, 5080) ||
			string(ev.Message) != string(refused[42+len(prefix):]) {
			t.Errorf("%d CRLF bytes first: handed up from %v to %v with %q", len(prefix), ev.Src, ev.Dst, ev.Message)
		}
		f.MustAt(t, f.Now+2000*second) // the per-source bucket full again
	}
}
