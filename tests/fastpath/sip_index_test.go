package fastpath

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestSIPIndexIsOfOneMessage: the index of where an INVITE's Call-ID is
// (bpf/sip_index.h) never answers for the next message, even one at the
// same offset and of the same length. A response is not walked by the
// classifier; if the INVITE's index were read for it, its Call-ID would
// be taken from where the INVITE had it, which here is a Subject header
// naming a call the server did send: a forged answer would pass for one.
func TestSIPIndexIsOfOneMessage(t *testing.T) {
	f := harness.NewFastPath(t, false)
	e := newEgress(t, f)
	f.SetPolicy(t, egressAgents(t))
	agent := egressAgentAddrs[2]
	f.SetAgentAddrs(t, map[netip.Addr]int{agent: 2})
	rd := sipEvents(t, f)
	f.MustAt(t, 100*second)
	if v := e.judge(t, f, rd, inviteTo(agent, 1, pkt.SIPRequest("INVITE", harness.ToNoTag))); v.Refused {
		t.Fatal("the INVITE sent was refused")
	}
	const sent = "out-1@192.0.2.10"
	forged := "SIP/2.0 503 Service Unavailable\r\nVia: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK-1\r\n" +
		"To: " + harness.ToTag + "\r\nCall-ID: forged@192.0.2.10\r\nSubject: " + sent + "\r\n" +
		"CSeq: 314159 INVITE\r\nContent-Length: 0\r\n\r\n"
	// An INVITE from the agent, whose Call-ID value starts where the
	// response's Subject value does, and as long as the response.
	at := strings.Index(forged, "Subject: ") + len("Subject: ")
	head := "INVITE sip:bob@192.0.2.10 SIP/2.0\r\nVia: SIP/2.0/UDP 198.51.100.32:5060;branch=z9hG4bK-in\r\n" +
		"To: " + harness.ToNoTag + "\r\nX-Pad: "
	pad := at - len(head) - len("\r\nCall-ID: ")
	if pad < 0 {
		t.Fatal("the INVITE's head is longer than the response's")
	}
	invite := head + strings.Repeat("a", pad) + "\r\nCall-ID: in-1@198.51.100.32\r\nCSeq: 1 INVITE\r\nX-End: "
	invite += strings.Repeat("b", len(forged)-len(invite)-len("\r\n\r\n")) + "\r\n\r\n"
	if len(invite) != len(forged) || strings.Index(invite, "in-1@") != at {
		t.Fatalf("the INVITE is %d bytes with its Call-ID at %d; want %d and %d", len(invite), strings.Index(invite, "in-1@"), len(forged), at)
	}
	udp := func(s string) []byte {
		return pkt.Frame(pkt.Ether{}, pkt.IPv4{Src: agent, Dst: serverAddr}, pkt.UDP{Src: 5060, Dst: 5060}, pkt.Raw(s))
	}
	f.MustAt(t, 101*second)
	if err := f.Check(udp(invite)); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(udp(forged)); err != nil {
		t.Fatal(err)
	}
	if ev := readSIPEvent(t, rd); ev.Kind != maps.SIPAgentResponse || ev.Sent {
		t.Errorf("the forged answer was handed up as %+v (sent %v); want an agent's response to nothing sent", ev.Kind, ev.Sent)
	}
}
