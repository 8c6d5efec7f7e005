package peers

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// retransmitConfig limits each caller to two calls, ever, and answers a
// refused INVITE with 503.
const retransmitConfig = "classes:\n  sip-invite: {action: reject, per-source: {cps: 0.001, burst: 2}}\n"

// TestInviteRetransmittedToKamailio: a caller sends its INVITE seven
// times before any answer can come, as a client over UDP does when the
// first is slow to be answered. Kamailio behind the filter handles all
// seven and the caller gets its 200, never a 503; the copies took one
// call of the caller's two, so its second call is admitted and its third
// refused with 503, and a retransmission of that third INVITE gets the
// same 503 again, taking nothing.
func TestInviteRetransmittedToKamailio(t *testing.T) {
	tb := harness.SipTestbed(t)
	kam := testenv.StartKamailio(t, tb.Box, harness.BoxIP)
	tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"metrics: {listen: \"127.0.0.1:0\"}\n"+retransmitConfig))
	caller := harness.ListenUDP(t, tb.Peer, harness.StrangerIP+":5070")
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(harness.BoxIP + ":5060"))
	invite := func(call string) []byte {
		return []byte("INVITE sip:bob@" + harness.BoxIP + " SIP/2.0\r\n" +
			"Via: SIP/2.0/UDP " + harness.StrangerIP + ":5070;rport;branch=z9hG4bK-" + call + "\r\n" +
			"Max-Forwards: 70\r\nTo: <sip:bob@" + harness.BoxIP + ">\r\nFrom: <sip:alice@" + harness.StrangerIP + ">;tag=" + call + "\r\n" +
			"Call-ID: " + call + "@" + harness.StrangerIP + "\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n")
	}
	send := func(call string, copies int) {
		t.Helper()
		for range copies {
			if _, err := caller.WriteToUDP(invite(call), to); err != nil {
				t.Fatal(err)
			}
		}
	}
	// answers reads what comes back for n copies: the status lines.
	answers := func(n int) []string {
		t.Helper()
		var got []string
		buf := make([]byte, 4096)
		caller.SetReadDeadline(time.Now().Add(5 * time.Second))
		for len(got) < n {
			m, _, err := caller.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("%d answers of %d: %v (so far %q)", len(got), n, err, got)
			}
			line, _, _ := strings.Cut(string(buf[:m]), "\r\n")
			got = append(got, line)
		}
		return got
	}
	only := func(got []string, status string) bool {
		for _, l := range got {
			if !strings.HasPrefix(l, "SIP/2.0 "+status) {
				return false
			}
		}
		return true
	}

	send("first", 7)
	if got := answers(7); !only(got, "200") {
		t.Errorf("the INVITE sent seven times: answers %q, want only 200s", got)
	}
	testenv.WaitFor(t, func() bool { return kam.Count("first@") >= 7 }) // its log may lag its answers
	if n := kam.Count("first@"); n != 7 {
		t.Errorf("Kamailio handled %d copies of the INVITE, want 7", n)
	}
	st := tb.Stats(t)
	if inv := st.Classes["sip-invite"]; inv.Admitted != 7 || st.SIPRetransmits != 6 {
		t.Errorf("sip-invite %+v with %d retransmissions; want 7 admitted, 6 of them retransmissions", inv, st.SIPRetransmits)
	}

	send("second", 1)
	if got := answers(1); !only(got, "200") {
		t.Errorf("the second call: %q, want 200: the retransmissions took its token", got)
	}
	send("third", 1)
	if got := answers(1); !only(got, "503") {
		t.Errorf("the third call of a caller with two: %q, want 503", got)
	}
	send("third", 2)
	if got := answers(2); !only(got, "503") {
		t.Errorf("the refused INVITE retransmitted: %q, want the same 503 again", got)
	}
	st = tb.Stats(t)
	if inv := st.Classes["sip-invite"]; inv.Admitted != 8 || inv.Reasons["source"] != 3 || st.SIPRetransmitsRefused != 2 {
		t.Errorf("sip-invite %+v, %d refused again; want 8 admitted, 3 refused by source, 2 of them again", inv, st.SIPRetransmitsRefused)
	}
	if n := kam.Count("second@") + kam.Count("third@"); n != 1 {
		t.Errorf("Kamailio handled %d INVITEs of the second and third calls, want the second's", n)
	}
	body := ""
	testenv.Poll(5*time.Second, 50*time.Millisecond, func() bool {
		body = tb.Metrics(t)
		return strings.Contains(body, "xdpcac_sip_rejects_answered_total 3\n")
	})
	for _, want := range []string{
		"xdpcac_sip_rejects_answered_total 3",
		`xdpcac_sip_retransmits_total{iface="` + tb.Box + ":" + tb.BoxIface + `",verdict="pass"} 6`,
		`xdpcac_sip_retransmits_total{iface="` + tb.Box + ":" + tb.BoxIface + `",verdict="drop"} 2`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, harness.GrepLines(body, "xdpcac_sip"))
		}
	}
}

// TestSippRetransmissionsNeverRefused: sipp calls a callee that answers
// only after 1.2 s, so every INVITE is retransmitted before its answer,
// under a limit of exactly the calls placed with action: reject. Every
// call completes: no retransmission is refused, and no 503 is sent, after
// the 200 or before it.
func TestSippRetransmissionsNeverRefused(t *testing.T) {
	tb := harness.SipTestbed(t)
	tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"metrics: {listen: \"127.0.0.1:0\"}\n"+
		"classes:\n  sip-invite: {action: reject, per-source: {cps: 0.001, burst: 5}}\n"))
	uas := testenv.StartSipp(t, tb.Box, "-sf", testenv.ScenarioPath(t, "invite-uas-slow"), "-i", harness.BoxIP, "-p", "5060", "-t", "u1")
	defer uas.Stop()
	uac := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "invite-uac-200"), "-i", harness.AgentIP, "-p", "5062", "-t", "u1",
		"-m", "5", "-r", "5", "-recv_timeout", "8000", harness.BoxIP+":5060")
	if err := uac.Wait(60 * time.Second); err != nil {
		t.Errorf("sipp: %v\n%s", err, uac.Log())
	}
	if ok := sippCount(t, uac.Log(), "Successful call"); ok != 5 {
		t.Errorf("%d of 5 calls completed", ok)
	}
	st := tb.Stats(t)
	inv := st.Classes["sip-invite"]
	t.Logf("sip-invite %+v, %d retransmissions passed", inv, st.SIPRetransmits)
	if st.SIPRetransmits < 5 || inv.Rejected != 0 {
		t.Errorf("sip-invite %+v with %d retransmissions; want each call's INVITE retransmitted and none refused", inv, st.SIPRetransmits)
	}
	if body := tb.Metrics(t); !strings.Contains(body, "xdpcac_sip_rejects_answered_total 0\n") {
		t.Errorf("a 503 was sent:\n%s", harness.GrepLines(body, "xdpcac_sip_rejects"))
	}
}
