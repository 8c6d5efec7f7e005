package fastpath

import (
	"net/netip"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// The addresses of the dialog tests: the caller, and the SIP server behind
// the filter.
var (
	dialogCaller = netip.MustParseAddr("203.0.113.5")
	dialogServer = netip.MustParseAddr("192.0.2.10")
)

// dialogFastPath is a fast path at 5 s whose sip-indialog limit is a
// bucket of one per source that never refills (and whose sip-invite limit
// is the same when invites is set): what passes beyond it passed as a
// verified dialog's.
func dialogFastPath(t *testing.T, invites bool) *harness.FastPath {
	t.Helper()
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.PerSource[cac.SIPInDialog] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	if invites {
		p.PerSource[cac.SIPInvite] = p.PerSource[cac.SIPInDialog]
	}
	f.SetPolicy(t, p)
	f.MustAt(t, 5*second)
	return f
}

// toServer is a SIP message from src to the server.
func toServer(src netip.Addr, s SIP) []byte {
	return Frame(Ether{}, IPv4{Src: src, Dst: dialogServer}, UDP{Src: 5060, Dst: 5060}, s)
}

// TestDialogBoundToPeers: a dialog is known by its Call-ID and its two
// sides. The caller of an admitted INVITE and the callee the server sent
// the call on to pass uncharged; the same Call-ID from a stranger, or
// from the caller's neighbour, is held by the sip-indialog bucket as an
// unknown dialog's would be, and counts as unverified. A refused INVITE
// teaches nothing, and another INVITE of the dialog from a stranger,
// admitted as a new call, takes no side of it. The model agrees on every
// frame.
func TestDialogBoundToPeers(t *testing.T) {
	f := dialogFastPath(t, true)
	e := newEgress(t, f)

	caller, server := dialogCaller, dialogServer
	neighbour := netip.MustParseAddr("203.0.113.6")
	stranger := netip.MustParseAddr("198.51.100.99")
	callee := netip.MustParseAddr("198.51.100.20")
	const id = "Call-ID: bound@203.0.113.5"
	in := toServer
	bye := harness.WithCallID(SIPRequest("BYE", harness.ToTag), id)

	if passed, _ := f.Offer(t, in(caller, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), id)), 1); passed != 1 {
		t.Fatal("the caller's INVITE was refused")
	}
	// A stranger's INVITE of the same Call-ID, admitted as a call of its
	// own, leaves the dialog's sides as they were.
	if passed, _ := f.Offer(t, in(stranger, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), id)), 1); passed != 1 {
		t.Fatal("the stranger's INVITE was refused")
	}
	if passed, reasons := f.Offer(t, in(caller, bye), 5); passed != 5 {
		t.Errorf("the caller's requests: %d of 5 passed (%v), want all, uncharged", passed, reasons)
	}
	for _, who := range []netip.Addr{stranger, neighbour} {
		passed, reasons := f.Offer(t, in(who, bye), 3)
		if passed != 1 || reasons[cac.ReasonSource] != 2 {
			t.Errorf("%v with the dialog's Call-ID: %d of 3 passed (%v), want the bucket's one, then refused", who, passed, reasons)
		}
	}
	// The server sends the call on to the callee, which may then speak.
	out := Frame(Ether{}, IPv4{Src: server, Dst: callee}, UDP{Src: 5060, Dst: 5060}, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), id))
	if err := e.send(f, out); err != nil {
		t.Fatal(err)
	}
	if passed, reasons := f.Offer(t, in(callee, bye), 4); passed != 4 {
		t.Errorf("the callee's requests: %d of 4 passed (%v), want all, uncharged", passed, reasons)
	}
	if passed, _ := f.Offer(t, in(caller, bye), 2); passed != 2 {
		t.Errorf("the caller's requests after the callee was learnt: %d of 2 passed", passed)
	}
	if got := f.Stats(t).SIPInDialogVerified; got != 11 {
		t.Errorf("%d in-dialog requests counted verified, want 11 (the two sides' only)", got)
	}

	// A refused INVITE teaches no dialog: its Call-ID is still a stranger's.
	const refusedID = "Call-ID: refused@203.0.113.5"
	if passed, _ := f.Offer(t, in(caller, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), refusedID)), 1); passed != 0 {
		t.Fatal("the caller's second INVITE passed a spent per-source bucket")
	}
	before := f.Stats(t).SIPInDialogVerified
	if passed, _ := f.Offer(t, in(caller, harness.WithCallID(SIPRequest("BYE", harness.ToTag), refusedID)), 3); passed != 1 {
		t.Errorf("requests of a refused INVITE's dialog: %d of 3 passed, want the caller's sip-indialog bucket of one", passed)
	}
	if got := f.Stats(t).SIPInDialogVerified; got != before {
		t.Errorf("a refused INVITE's dialog: %d requests counted verified", got-before)
	}
}

// TestDialogBucket: a verified dialog's requests are held by a bucket of
// their own, CAC_DIALOG_BURST at once and CAC_DIALOG_CPS a second; past
// it they are held by the sip-indialog limits as a stranger's are, so one
// admitted INVITE opens no unlimited path. The model agrees on each.
func TestDialogBucket(t *testing.T) {
	f := dialogFastPath(t, false)
	in := func(s SIP) []byte { return toServer(dialogCaller, s) }
	const id = "Call-ID: bucket@203.0.113.5"
	if passed, _ := f.Offer(t, in(harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), id)), 1); passed != 1 {
		t.Fatal("the INVITE was refused")
	}
	info := in(harness.WithCallID(SIPRequest("INFO", harness.ToTag), id))
	if passed, _ := f.Offer(t, info, admission.DialogBurst); passed != admission.DialogBurst {
		t.Fatalf("a burst of the dialog's requests: %d of %d passed", passed, admission.DialogBurst)
	}
	if got := f.Stats(t).SIPInDialogVerified; got != admission.DialogBurst {
		t.Errorf("%d verified, want %d", got, admission.DialogBurst)
	}
	// Past the dialog's bucket: the caller's sip-indialog bucket of one.
	if passed, reasons := f.Offer(t, info, 3); passed != 1 || reasons[cac.ReasonSource] != 2 {
		t.Errorf("past the dialog's bucket: %d of 3 passed (%v), want the sip-indialog bucket's one", passed, reasons)
	}
	f.MustAt(t, f.Now+second)
	before := f.Stats(t).SIPInDialogVerified
	if passed, _ := f.Offer(t, info, admission.DialogCPS); passed != admission.DialogCPS {
		t.Errorf("a second on: %d of %d passed", passed, admission.DialogCPS)
	}
	if got := f.Stats(t).SIPInDialogVerified - before; got != admission.DialogCPS {
		t.Errorf("a second on: %d verified, want %d", got, admission.DialogCPS)
	}
}

// TestDialogForgottenOnRefusal: a dialog whose INVITE the server refuses
// (a final answer of 300 or more going out) is forgotten, so a Call-ID
// learnt from a refused call opens no path, even from the caller; one the
// server answered with a 2xx lives on through a refused re-INVITE. An
// answer to another method changes nothing. The model agrees on every
// frame both ways.
func TestDialogForgottenOnRefusal(t *testing.T) {
	f := dialogFastPath(t, false)
	e := newEgress(t, f)
	caller, server := dialogCaller, dialogServer
	in := func(s SIP) []byte { return toServer(caller, s) }
	answer := func(id, status, cseq string) []byte {
		return Frame(Ether{}, IPv4{Src: server, Dst: caller}, UDP{Src: 5060, Dst: 5060},
			Raw("SIP/2.0 "+status+"\r\nVia: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bK-1\r\n"+
				"To: <sip:b@example.com>;tag=srv\r\nFrom: <sip:a@example.com>;tag=1\r\n"+
				"Call-ID: "+id+"\r\nCSeq: "+cseq+"\r\nContent-Length: 0\r\n\r\n"))
	}
	call := func(id string) {
		t.Helper()
		if passed, _ := f.Offer(t, in(harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: "+id)), 1); passed != 1 {
			t.Fatalf("%s: the INVITE was refused", id)
		}
	}
	verified := func(id string) bool {
		t.Helper()
		before := f.Stats(t).SIPInDialogVerified
		f.Offer(t, in(harness.WithCallID(SIPRequest("BYE", harness.ToTag), "Call-ID: "+id)), 1)
		return f.Stats(t).SIPInDialogVerified == before+1
	}
	send := func(frame []byte) {
		t.Helper()
		if err := e.send(f, frame); err != nil {
			t.Fatal(err)
		}
	}

	call("refused@203.0.113.5")
	send(answer("refused@203.0.113.5", "180 Ringing", "1 INVITE"))
	send(answer("refused@203.0.113.5", "486 Busy Here", "1 bye"))
	if !verified("refused@203.0.113.5") {
		t.Error("a refusal of another method forgot the dialog")
	}
	send(answer("refused@203.0.113.5", "403 Forbidden", "1  invite"))
	if verified("refused@203.0.113.5") {
		t.Error("the dialog of an INVITE the server refused is still verified")
	}

	call("answered@203.0.113.5")
	send(answer("answered@203.0.113.5", "200 OK", "1 INVITE"))
	send(answer("answered@203.0.113.5", "491 Request Pending", "2 INVITE"))
	if !verified("answered@203.0.113.5") {
		t.Error("a refused re-INVITE ended a dialog the server had answered")
	}
}

// TestDialogIdle: a dialog silent for an hour since its last verified
// request is no longer verified; its requests are then held by the
// sip-indialog limits as a stranger's are. One that speaks stays verified.
func TestDialogIdle(t *testing.T) {
	f := dialogFastPath(t, false)
	in := func(s SIP) []byte { return toServer(dialogCaller, s) }
	for _, id := range []string{"Call-ID: talks@203.0.113.5", "Call-ID: silent@203.0.113.5"} {
		if passed, _ := f.Offer(t, in(harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), id)), 1); passed != 1 {
			t.Fatal("the INVITE was refused")
		}
	}
	talks := in(harness.WithCallID(SIPRequest("INFO", harness.ToTag), "Call-ID: talks@203.0.113.5"))
	silent := in(harness.WithCallID(SIPRequest("BYE", harness.ToTag), "Call-ID: silent@203.0.113.5"))
	verified := func(frame []byte) bool {
		t.Helper()
		before := f.Stats(t).SIPInDialogVerified
		f.Offer(t, frame, 1)
		return f.Stats(t).SIPInDialogVerified == before+1
	}
	f.MustAt(t, f.Now+uint64(admission.DialogIdleNS)/2)
	if !verified(talks) {
		t.Fatal("a dialog half an hour into its silence is not verified")
	}
	f.MustAt(t, f.Now+uint64(admission.DialogIdleNS)/2+second)
	if !verified(talks) {
		t.Error("a dialog that spoke half an hour ago is not verified")
	}
	if verified(silent) {
		t.Error("a dialog silent for an hour is still verified")
	}
}
