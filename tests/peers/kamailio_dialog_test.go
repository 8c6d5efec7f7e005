package peers

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// kamailioDialogClasses lets calls in and holds every other request to one
// a second, burst one, for each source and in all: what passes beyond that
// passed uncharged, as a request of a verified dialog or a CANCEL of an
// admitted INVITE.
const kamailioDialogClasses = `classes:
  sip-invite:   {cps: 1000, burst: 1000}
  sip-other:    {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
  sip-indialog: {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
`

// inDialog is a request of the call callID from src, method with a To tag
// and CSeq cseq.
func inDialog(method string, src netip.Addr, callID, tag string, cseq int) string {
	h := replaceHeader(kamHeaders(method, src, callID), "To:", "To: Bob <sip:bob@example.com>;tag="+tag)
	h = replaceHeader(h, "CSeq:", fmt.Sprintf("CSeq: %d %s", cseq, method))
	h = replaceHeader(h, "Via:", "Via: SIP/2.0/UDP "+netip.AddrPortFrom(src, 5062).String()+fmt.Sprintf(";branch=z9hG4bK-%s-%d", method, cseq))
	return sipText(method+" sip:bob@example.com SIP/2.0", h, "")
}

// logged counts the requests Kamailio logged of callID from src (any
// source when src is invalid) whose method is one of methods.
func (b *kamBed) logged(callID string, src netip.Addr, methods ...string) int {
	n := 0
	for _, r := range b.k.Requests() {
		if r.CallID != callID || (src.IsValid() && r.Source != src.String()) {
			continue
		}
		for _, m := range methods {
			if r.Method == m {
				n++
			}
		}
	}
	return n
}

// TestKamailioDialogHarm: during a sipp call through Kamailio, forged
// BYEs, INFOs and re-INVITEs with the call's Call-ID and invented tags,
// from a stranger and from 100 spoofed sources, reach Kamailio no more than
// the sip-indialog limits allow (one a second, burst one) and none counts
// verified, while the call's own ACKs, re-INVITE and BYE pass verified and
// are answered: sipp completes the call.
func TestKamailioDialogHarm(t *testing.T) {
	b := newKamBed(t, kamailioDialogClasses)
	caller, stranger := b.source(t, 80, false), b.source(t, 81, false)
	id := "harm-" + testenv.Unique("") + "@" + caller.String()
	sipp := testenv.StartSipp(t, b.Peer, "-sf", testenv.ScenarioPath(t, "reinvite-uac"), "-i", caller.String(),
		"-p", "5062", "-t", "u1", "-m", "1", "-d", "2000", "-cid_str", id, kamBoxV4+":5060")
	if !testenv.Poll(3*time.Second, 10*time.Millisecond, func() bool { return b.logged(id, caller, "ACK") == 1 }) {
		t.Fatal("the call was not set up: no ACK reached Kamailio")
	}
	_, before := b.charged(t)
	var flood [][]byte
	for i := range 300 {
		src := stranger
		if i%3 != 0 { // 200 of them from 100 spoofed sources
			src = netip.MustParseAddr(fmt.Sprintf("203.0.113.%d", 1+i%100))
		}
		method := []string{"BYE", "INFO", "INVITE"}[i%3]
		flood = append(flood, b.udpFrame(src, nil, inDialog(method, src, id, fmt.Sprintf("forged-%d", i), 100+i)))
	}
	start := time.Now()
	testenv.Send(t, b.Peer, b.PeerIfc, flood)
	limit := 1 + int(time.Since(start).Seconds()) + 1
	b.settle(id)
	forged := 0 // the call's requests come from the caller alone
	for _, r := range b.k.Requests() {
		if r.CallID == id && r.Source != caller.String() {
			forged++
		}
	}
	_, after := b.charged(t)
	t.Logf("forged requests: %d sent, %d reached Kamailio (limit %d), %d counted verified",
		len(flood), forged, limit, after.SIPInDialogVerified-before.SIPInDialogVerified)
	if forged > limit {
		t.Errorf("%d forged requests reached Kamailio, more than the sip-indialog limits allow (%d)", forged, limit)
	}
	if after.SIPInDialogVerified != before.SIPInDialogVerified {
		t.Errorf("%d forged requests counted verified", after.SIPInDialogVerified-before.SIPInDialogVerified)
	}
	// The call's own: a re-INVITE, its ACK and a BYE, each answered.
	if err := sipp.Wait(15 * time.Second); err != nil {
		t.Errorf("sipp's call did not complete: %v", err)
	}
	if n := b.logged(id, caller, "INVITE", "ACK", "BYE"); n != 5 {
		t.Errorf("Kamailio handled %d of the call's 5 requests", n)
	}
	if _, v := b.charged(t); v.SIPInDialogVerified != after.SIPInDialogVerified+3 {
		t.Errorf("the call's re-INVITE, ACK and BYE: %d verified, want 3", v.SIPInDialogVerified-after.SIPInDialogVerified)
	}
}

// TestKamailioCancelDuringFlood: while a stranger floods sip-other at 1,000
// requests a second, far over its limits, ten calls are each cancelled:
// every CANCEL reaches Kamailio, uncharged, and the flood no more than
// sip-other's limits allow.
func TestKamailioCancelDuringFlood(t *testing.T) {
	b := newKamBed(t, kamailioDialogClasses)
	caller, stranger := b.source(t, 82, false), b.source(t, 83, false)
	prefix := "cancel." + testenv.Unique("") + "-"
	floodID := "flood." + testenv.Unique("")
	// A CANCEL repeats its INVITE's Call-ID, CSeq number and Via.
	cancel := func(id string) string {
		return strings.ReplaceAll(kamRequest("INVITE", caller, id), "INVITE", "CANCEL")
	}
	start := time.Now()
	for i := range 10 {
		var frames [][]byte
		for j := range 100 {
			frames = append(frames, b.udpFrame(stranger, nil, kamRequest("MESSAGE", stranger, fmt.Sprintf("%s-%d-%d", floodID, i, j))))
		}
		id := fmt.Sprintf("%s%d", prefix, i)
		frames = append(frames[:50], append([][]byte{
			b.udpFrame(caller, nil, kamRequest("INVITE", caller, id)),
			b.udpFrame(caller, nil, cancel(id)),
		}, frames[50:]...)...)
		testenv.Send(t, b.Peer, b.PeerIfc, frames)
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.settle(prefix)
	cancels := 0
	for _, r := range b.k.Requests() {
		if strings.HasPrefix(r.CallID, prefix) && r.Method == "CANCEL" {
			cancels++
		}
	}
	flood := b.settle(floodID)
	limit := 1 + int(elapsed.Seconds()) + 1
	t.Logf("in %v: %d of 10 CANCELs reached Kamailio; %d of 1,000 flooding MESSAGEs (limit %d)", elapsed.Round(time.Millisecond), cancels, flood, limit)
	if cancels != 10 {
		t.Errorf("%d of 10 CANCELs of admitted INVITEs reached Kamailio during the flood, want all", cancels)
	}
	if flood > limit {
		t.Errorf("%d flooding MESSAGEs reached Kamailio, more than sip-other's limits allow (%d)", flood, limit)
	}
}
