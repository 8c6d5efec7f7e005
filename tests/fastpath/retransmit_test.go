package fastpath

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// invite is an INVITE of a call, its transaction named by cseq and
// branch, from a stranger.
func invite(callID string, cseq int, branch string) []byte {
	s := SIPRequest("INVITE", harness.ToNoTag).
		With("Call-ID", callID).
		With("CSeq", fmt.Sprintf("%d INVITE", cseq)).
		With("Via", "SIP/2.0/UDP 198.51.100.7:5060;branch="+branch)
	return Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Src: 5060, Dst: 5060}, s)
}

// TestRetransmissions: an INVITE retransmitted six times, as a client
// over UDP does before Timer B, costs one token; a retransmission of a
// refused INVITE is refused again for the same reason and takes nothing,
// even once the bucket has refilled; a new transaction of the same call
// (another CSeq, another branch) is a new INVITE; and a replay past the
// allowance is charged anew. The model agrees frame by frame.
func TestRetransmissions(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 1, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	f.SetPolicy(t, p)
	f.MustAt(t, 100*second)

	a := invite("call-a@198.51.100.7", 1, "z9hG4bK-a1")
	if passed, reasons := f.Offer(t, a, 7); passed != 7 {
		t.Fatalf("an INVITE and its six retransmissions: %d of 7 passed (%v)", passed, reasons)
	}
	// One token of the two is left: the retransmissions took nothing.
	if passed, _ := f.Offer(t, invite("call-b@198.51.100.7", 1, "z9hG4bK-b1"), 1); passed != 1 {
		t.Fatal("the second call found no token: the retransmissions were charged")
	}
	c := invite("call-c@198.51.100.7", 1, "z9hG4bK-c1")
	if passed, reasons := f.Offer(t, c, 4); passed != 0 || reasons[cac.ReasonSource] != 4 {
		t.Fatalf("a refused INVITE and its retransmissions: %d of 4 passed (%v), want all refused by source", passed, reasons)
	}
	if st := f.Stats(t); st.SIPRetransmits != 6 || st.SIPRetransmitsRefused != 3 {
		t.Errorf("retransmissions counted %d passed, %d refused; want 6 and 3", st.SIPRetransmits, st.SIPRetransmitsRefused)
	}

	// Two seconds on, the bucket holds two tokens again: the refused
	// call's retransmission is still refused and leaves both.
	f.MustAt(t, f.Now+2*second)
	if passed, reasons := f.Offer(t, c, 1); passed != 0 || reasons[cac.ReasonSource] != 1 {
		t.Errorf("the refused INVITE retransmitted after a refill: passed %d (%v), want refused by source again", passed, reasons)
	}
	// A new transaction of a call (after a 401, say) is charged.
	if passed, _ := f.Offer(t, invite("call-a@198.51.100.7", 2, "z9hG4bK-a2"), 1); passed != 1 {
		t.Error("call a's second transaction was refused with two tokens in the bucket")
	}
	if passed, _ := f.Offer(t, invite("call-d@198.51.100.7", 1, "z9hG4bK-d1"), 1); passed != 1 {
		t.Error("a new call was refused: the refused retransmission took a token")
	}
	if passed, _ := f.Offer(t, invite("call-e@198.51.100.7", 1, "z9hG4bK-e1"), 1); passed != 0 {
		t.Error("a third call passed a bucket of two: a new transaction went uncharged")
	}

	// Past Timer B a refused INVITE is judged anew.
	f.MustAt(t, f.Now+admission.TimerBNS/1e9*second+second)
	if passed, reasons := f.Offer(t, c, 1); passed != 1 {
		t.Errorf("the refused INVITE after Timer B: refused (%v), want judged as a new call", reasons)
	}

	// A replay of one transaction passes uncharged only so often: then
	// each copy is charged, and the bucket of two holds it.
	f.MustAt(t, f.Now+10*second)
	r := invite("call-r@198.51.100.7", 1, "z9hG4bK-r1")
	passed, reasons := f.Offer(t, r, 1+admission.RetransmitsMax+5)
	if want := 1 + admission.RetransmitsMax + 1; passed != want || reasons[cac.ReasonSource] != 4 {
		t.Errorf("a replayed INVITE: %d passed (%v), want %d: the call, %d retransmissions, then one copy charged to the last token and 4 refused by source",
			passed, reasons, want, admission.RetransmitsMax)
	}
}

// TestRetransmissionForms: however a request spells its transaction's
// headers (compact forms, odd case, leading CRLFs, IPv6 with extension
// headers, VLANs), a copy is taken for a retransmission by the program as
// by the model, and a copy from another source is a call of its own.
func TestRetransmissionForms(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 1, 1000)
	f.SetPolicy(t, p)
	f.MustAt(t, 100*second)
	compact := SIPRequest("INVITE", harness.ToNoTag)
	compact.Headers = []string{"v:SIP/2.0/UDP 198.51.100.7;branch=z9hG4bKc", "t: " + harness.ToNoTag, "i:  compact@198.51.100.7", "cseq: 7 INVITE", "l: 0"}
	lower := SIPRequest("invite", harness.ToNoTag).With("Call-ID", "lower@198.51.100.7")
	lower.Prefix = "\r\n\r\n"
	forms := map[string][]byte{
		"compact":         Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Dst: 5060}, compact),
		"lower case CRLF": Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Dst: 5060}, lower),
		"IPv6":            Frame(Ether{}, IPv6{Src: netip.MustParseAddr("2001:db8::7"), Ext: []Ext{{Proto: 0}, {Proto: 43, Len: 1}, {Proto: 60}}}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", "v6@198.51.100.7")),
		"VLAN":            Frame(Ether{}, VLAN{ID: 7}, IPv4{Src: strangerAddr}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", "vlan@198.51.100.7")),
	}
	for name, frame := range forms {
		before := f.Stats(t).SIPRetransmits
		if passed, reasons := f.Offer(t, frame, 2); passed != 2 {
			t.Errorf("%s: %d of 2 passed (%v)", name, passed, reasons)
		}
		if n := f.Stats(t).SIPRetransmits - before; n != 1 {
			t.Errorf("%s: %d retransmissions counted of the copy, want 1", name, n)
		}
	}
	// The same bytes from another address are another caller's call.
	a := Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", "spoofed@198.51.100.7"))
	b := Frame(Ether{}, IPv4{Src: agentAddr}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", "spoofed@198.51.100.7"))
	before := f.Stats(t).SIPRetransmits
	f.Offer(t, a, 1)
	f.Offer(t, b, 1)
	if n := f.Stats(t).SIPRetransmits - before; n != 0 {
		t.Errorf("a copy from another source was taken for a retransmission (%d)", n)
	}
}

// TestTransactionHashes holds the program's hashes to the model's: for
// Call-IDs of every length up to past the hashed 256 bytes, last in the
// message or not (so that both the word-wise and the byte-wise ends of
// the hash are taken), the dialog table the program wrote holds the
// model's Call-ID hash and transaction.
func TestTransactionHashes(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 1, 1e6)
	f.SetPolicy(t, p)
	f.MustAt(t, 100*second)
	for n := 1; n <= 270; n++ {
		for _, last := range []bool{false, true} {
			id := strings.Repeat("x", n-1) + fmt.Sprint(n%10)
			var payload Layer = SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", id)
			if last { // the Call-ID ends the message, with no line end
				payload = Raw("INVITE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 198.51.100.7;branch=z9hG4bK1\r\n" +
					"To: " + harness.ToNoTag + "\r\nCSeq: 1 INVITE\r\nCall-ID: " + id)
			}
			frame := Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Dst: 5060}, payload)
			if err := f.Check(frame); err != nil {
				t.Fatalf("Call-ID of %d bytes: %v", n, err)
			}
			_, msg := classify.ClassifySIP(frame, f.Model.Ports)
			callid, txn := classify.Txn(msg)
			d, ok := harness.LookupDialog(t, f.Objs.Dialogs, callid)
			if !ok {
				t.Errorf("Call-ID of %d bytes (last %v): the program's dialog table has no %x", n, last, callid)
				continue
			}
			if want := classify.FromSource(txn, classify.SourceOf(frame)); d.Txn != want {
				t.Errorf("Call-ID of %d bytes (last %v): transaction %x, the model's %x", n, last, d.Txn, want)
			}
		}
	}
}

// TestRetransmissionLongHeaders: INVITEs whose Call-ID or top Via differ
// only past the bytes a header is hashed by are other transactions to the
// server, so each is charged as a new call; and one of them resent byte
// for byte is no retransmission either, since its transaction cannot be
// told apart. Those within the bound still are. The model agrees.
func TestRetransmissionLongHeaders(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	f.SetPolicy(t, p)
	f.MustAt(t, 100*second)

	long := strings.Repeat("x", 300)
	first := invite("call-"+long+"-1@198.51.100.7", 1, "z9hG4bK-long")
	if passed, _ := f.Offer(t, first, 1); passed != 1 {
		t.Fatal("the first INVITE was refused")
	}
	for i, frame := range [][]byte{
		invite("call-"+long+"-2@198.51.100.7", 1, "z9hG4bK-long"),
		invite("call-"+long+"-1@198.51.100.7", 1, "z9hG4bK-long"+long),
		first,
	} {
		if passed, reasons := f.Offer(t, frame, 1); passed != 0 || reasons[cac.ReasonSource] != 1 {
			t.Errorf("INVITE %d, alike within the hashed bytes: passed %d (%v), want refused by source as a new call", i, passed, reasons)
		}
	}
	if st := f.Stats(t); st.SIPRetransmits != 0 {
		t.Errorf("%d retransmissions counted of transactions that cannot be told apart", st.SIPRetransmits)
	}
}

// TestCancelOfAdmittedInvite: a CANCEL names the transaction of the INVITE
// it cancels (Call-ID, CSeq number, top Via, source), and one of an INVITE
// the filter admitted passes uncharged while a flood has spent sip-other's
// bucket, counted with the INVITE's copies; a CANCEL of another INVITE,
// from elsewhere, or later than CAC_CANCEL_S is a sip-other request like
// any. The model agrees frame by frame.
func TestCancelOfAdmittedInvite(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	p.PerSource[cac.SIPOther] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	f.SetPolicy(t, p)
	f.MustAt(t, 100*second)

	cancel := func(src netip.Addr, callID string, cseq int, branch string) []byte {
		s := SIPRequest("cancel", harness.ToNoTag).
			With("Call-ID", callID).
			With("CSeq", fmt.Sprintf("%d CANCEL", cseq)).
			With("Via", "SIP/2.0/UDP 198.51.100.7:5060;branch="+branch)
		return Frame(Ether{}, IPv4{Src: src}, UDP{Src: 5060, Dst: 5060}, s)
	}
	if passed, _ := f.Offer(t, invite("ringing@198.51.100.7", 7, "z9hG4bK-r"), 1); passed != 1 {
		t.Fatal("the INVITE was refused")
	}
	if passed, _ := f.Offer(t, Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Src: 5060, Dst: 5060}, SIPRequest("MESSAGE", harness.ToNoTag)), 1); passed != 1 {
		t.Fatal("the MESSAGE that spends sip-other's bucket was refused")
	}
	if passed, reasons := f.Offer(t, cancel(strangerAddr, "ringing@198.51.100.7", 7, "z9hG4bK-r"), 3); passed != 3 {
		t.Errorf("the CANCEL of the admitted INVITE and two copies: %d of 3 passed (%v), want all, uncharged", passed, reasons)
	}
	if st := f.Stats(t); st.SIPRetransmits != 3 {
		t.Errorf("%d counted with the INVITE's copies, want 3", st.SIPRetransmits)
	}
	other := netip.MustParseAddr("198.51.100.8")
	for name, frame := range map[string][]byte{
		"another CSeq":  cancel(strangerAddr, "ringing@198.51.100.7", 8, "z9hG4bK-r"),
		"another Via":   cancel(strangerAddr, "ringing@198.51.100.7", 7, "z9hG4bK-x"),
		"another call":  cancel(strangerAddr, "never@198.51.100.7", 7, "z9hG4bK-r"),
		"another place": cancel(other, "ringing@198.51.100.7", 7, "z9hG4bK-r"),
	} {
		passed, reasons := f.Offer(t, frame, 2)
		if name == "another place" && passed == 1 {
			continue // its own sip-other bucket of one
		}
		if passed != 0 || reasons[cac.ReasonSource] != 2 {
			t.Errorf("a CANCEL of %s: %d of 2 passed (%v), want refused by source as sip-other", name, passed, reasons)
		}
	}
	f.MustAt(t, f.Now+uint64(admission.CancelNS))
	if passed, _ := f.Offer(t, cancel(strangerAddr, "ringing@198.51.100.7", 7, "z9hG4bK-r"), 1); passed != 0 {
		t.Error("a CANCEL three minutes after its INVITE passed uncharged")
	}
}
