package daemon

import (
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestRejectFromServerPort: a refused INVITE of a class with action:
// reject is answered from the address and port it was sent to, though the
// SIP server's socket holds that port, to the port the caller sent from
// (its Via asks with rport, and names another), and the answer is
// counted in the daemon's metrics; a refused ACK is never answered and
// counts as suppressed.
func TestRejectFromServerPort(t *testing.T) {
	tb := harness.SipTestbed(t)
	server := harness.ListenUDP(t, tb.Box, harness.BoxIP+":5060") // the SIP server behind the filter
	tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"metrics: {listen: \"127.0.0.1:0\"}\n"+
		"classes:\n  sip-invite: {action: reject, per-source: {cps: 0.001, burst: 1}}\n"+
		"  sip-other: {action: reject, per-source: {cps: 0.001, burst: 1}}\n"))
	caller := harness.ListenUDP(t, tb.Peer, harness.StrangerIP+":0")
	invite := func(n int) string {
		return "INVITE sip:bob@" + harness.BoxIP + " SIP/2.0\r\n" +
			"Via: SIP/2.0/UDP " + harness.StrangerIP + ":5099;rport;branch=z9hG4bKanswer" + harness.Itoa(n) + "\r\n" +
			"Max-Forwards: 70\r\nTo: <sip:bob@" + harness.BoxIP + ">\r\nFrom: <sip:alice@" + harness.StrangerIP + ">;tag=" + harness.Itoa(n) + "\r\n" +
			"Call-ID: answer-" + harness.Itoa(n) + "@" + harness.StrangerIP + "\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
	}
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(harness.BoxIP + ":5060"))
	for n := 1; n <= 2; n++ { // the first takes the one call, the second is refused
		if _, err := caller.WriteToUDP([]byte(invite(n)), to); err != nil {
			t.Fatal(err)
		}
	}
	// The SIP server gets the admitted INVITE.
	buf := make([]byte, 4096)
	server.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := server.ReadFromUDPAddrPort(buf); err != nil || !strings.Contains(string(buf[:n]), "answer-1@") {
		t.Fatalf("the SIP server did not get the admitted INVITE: %v %q", err, buf[:n])
	}
	caller.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := caller.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("no answer to the refused INVITE: %v", err)
	}
	if want := netip.MustParseAddrPort(harness.BoxIP + ":5060"); from != want {
		t.Errorf("the 503 came from %v, want %v, the address and port the INVITE was sent to", from, want)
	}
	if msg := string(buf[:n]); !strings.HasPrefix(msg, "SIP/2.0 503 ") || !strings.Contains(msg, "answer-2@") {
		t.Errorf("the answer is not the 503 of the refused INVITE:\n%s", msg)
	}

	// A CANCEL of sip-other takes the one call; then an ACK out of dialog
	// is refused and never answered.
	ack := strings.ReplaceAll(invite(3), "INVITE", "ACK")
	for _, m := range []string{strings.ReplaceAll(invite(4), "INVITE", "CANCEL"), ack} {
		if _, err := caller.WriteToUDP([]byte(m), to); err != nil {
			t.Fatal(err)
		}
	}
	body := ""
	testenv.Poll(5*time.Second, 50*time.Millisecond, func() bool {
		body = tb.Metrics(t)
		return strings.Contains(body, "xdpcac_sip_rejects_suppressed_total 1")
	})
	for _, want := range []string{"xdpcac_sip_rejects_answered_total 1", "xdpcac_sip_rejects_suppressed_total 1"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, harness.GrepLines(body, "xdpcac_sip_rejects"))
		}
	}
}

// TestRejectOnIngressWire: the box routes the caller's address out of
// another interface (asymmetric routing, a VRF a side), yet the 503 of a
// refused INVITE reaches the caller: it leaves on the wire the INVITE came
// in on, to the MAC it came from, and only then counts as answered.
func TestRejectOnIngressWire(t *testing.T) {
	tb := harness.SipTestbed(t)
	other, _ := testenv.Veth(t, tb.Box, testenv.Netns(t)) // toward a namespace nobody listens in
	if out, err := exec.Command("ip", "-n", tb.Box, "route", "add", harness.StrangerIP+"/32", "dev", other).CombinedOutput(); err != nil {
		t.Fatalf("route the caller elsewhere: %v: %s", err, out)
	}
	harness.ListenUDP(t, tb.Box, harness.BoxIP+":5060")
	tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"metrics: {listen: \"127.0.0.1:0\"}\n"+
		"classes:\n  sip-invite: {action: reject, per-source: {cps: 0.001, burst: 1}}\n"))
	caller := harness.ListenUDP(t, tb.Peer, harness.StrangerIP+":0")
	invite := "INVITE sip:bob@" + harness.BoxIP + " SIP/2.0\r\n" +
		"Via: SIP/2.0/UDP " + harness.StrangerIP + ":5099;rport;branch=z9hG4bKwire\r\n" +
		"Max-Forwards: 70\r\nTo: <sip:bob@" + harness.BoxIP + ">\r\nFrom: <sip:alice@" + harness.StrangerIP + ">;tag=w\r\n" +
		"Call-ID: wire@" + harness.StrangerIP + "\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
	for i := range 2 { // the first takes the one call, the second is refused
		m := strings.ReplaceAll(invite, "wire", "wire"+harness.Itoa(i))
		if _, err := caller.WriteToUDP([]byte(m), net.UDPAddrFromAddrPort(netip.MustParseAddrPort(harness.BoxIP+":5060"))); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 4096)
	caller.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := caller.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("no answer reached the caller, whose address the box routes elsewhere: %v\n%s", err, harness.GrepLines(tb.Metrics(t), "xdpcac_sip_rejects"))
	}
	if msg := string(buf[:n]); !strings.HasPrefix(msg, "SIP/2.0 503 ") || from != netip.MustParseAddrPort(harness.BoxIP+":5060") {
		t.Errorf("answer from %v:\n%s", from, msg)
	}
	if body := tb.Metrics(t); !strings.Contains(body, "xdpcac_sip_rejects_answered_total 1\n") {
		t.Errorf("/metrics:\n%s", harness.GrepLines(body, "xdpcac_sip_rejects"))
	}
}
