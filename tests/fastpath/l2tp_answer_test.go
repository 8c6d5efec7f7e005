package fastpath

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestL2TPRefusedICRQAnswered walks one tunnel through the fast path and
// the egress program, for v2 over IPv4 and v3 over IPv6: the LNS's SCCRP
// makes the tunnel known; two ICRQs pass, the third is refused and turned
// into the ZLB the LNS would have sent; its copy is answered again; the
// LAC's later messages reach the LNS with Ns taken down by the ICRQs
// answered, and the LNS's go out with Nr put up by them; a copy of an
// admitted ICRQ passes uncharged; a StopCCN ends the translation after its
// hold. The model agrees on every verdict and every byte.
//
// Two limits refuse: the class bucket (burst 2), and the charge budget
// (limit 20, vpdn 10 30: two calls in force).
func TestL2TPRefusedICRQAnswered(t *testing.T) {
	limits := map[string]string{
		"class":        "classes:\n  l2tp-icrq: {cps: 0.001, burst: 2}\n",
		"total-charge": harness.Ios("limit 20", "vpdn 10 30"),
	}
	for reason, limit := range limits {
		for _, e := range []tunnelEnds{newTunnel(false, 2, 7, 42), newTunnel(true, 3, 0x70001, 0x2a0002)} {
			t.Run(fmt.Sprintf("%s/v%d/ipv6=%v", reason, e.ver, e.v6), func(t *testing.T) {
				walkTunnel(t, e, limit, reason)
			})
		}
	}
}

// walkTunnel is the walk of TestL2TPRefusedICRQAnswered under one limit.
func walkTunnel(t *testing.T, e tunnelEnds, limit, reason string) {
	f := harness.NewFastPath(t, false)
	eg := newEgress(t, f)
	f.SetPolicy(t, harness.PolicyOf(t, limit))
	f.MustAt(t, second)

	mustSend(t, eg, f, e.fromLNS(SCCRP, 0, 1))
	want := func(frame []byte, verdict cac.Verdict, what string) []byte {
		t.Helper()
		d, out, err := f.DecideOut(frame)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d.Verdict != verdict {
			t.Fatalf("%s: %v, want %v", what, d, verdict)
		}
		return out
	}
	want(e.fromLAC(msgSCCCN, 1, 1), cac.Pass, "SCCCN")
	want(e.fromLAC(ICRQ, 2, 1), cac.Pass, "first ICRQ")
	want(e.fromLAC(ICRQ, 3, 1), cac.Pass, "second ICRQ")

	zlb := want(e.fromLAC(ICRQ, 4, 1), cac.TX, "third ICRQ, over the burst")
	checkZLB(t, e, zlb, 1, 5)
	checkZLB(t, e, want(e.fromLAC(ICRQ, 4, 1), cac.TX, "its copy"), 1, 5)
	checkZLB(t, e, want(e.fromLAC(ICRQ, 5, 1), cac.TX, "a fourth ICRQ"), 1, 6)
	// The ZLB for the third was lost: its copy, behind the
	// fourth, is answered again for itself.
	checkZLB(t, e, want(e.fromLAC(ICRQ, 4, 1), cac.TX, "the third's copy again"), 1, 5)

	// Two answered: the LAC's Ns 6 is the LNS's 4.
	iccn := want(e.fromLAC(msgICCN, 6, 2), cac.Pass, "ICCN")
	checkNs(t, "ICCN", iccn, 4, 2)
	out := mustSend(t, eg, f, e.fromLNS(0, 3, 5))
	checkNs(t, "the LNS's ZLB", out, 3, 7)
	checkNs(t, "a copy of an admitted ICRQ", want(e.fromLAC(ICRQ, 3, 1), cac.Pass, "copy"), 1, 1)
	if st := f.Stats(t); st.L2TPAnswered != 4 || st.L2TPRetransmits != 3 || st.L2TPUnanswered != 0 {
		t.Errorf("answered %d, copies %d, unanswered %d; want 4, 3, 0", st.L2TPAnswered, st.L2TPRetransmits, st.L2TPUnanswered)
	}

	// A StopCCN: translated for its hold, then forgotten.
	checkNs(t, "StopCCN", want(e.fromLAC(msgStopCCN, 7, 3), cac.Pass, "StopCCN"), 5, 3)
	checkNs(t, "its ZLB", mustSend(t, eg, f, e.fromLNS(0, 3, 6)), 3, 8)
	f.MustAt(t, second+61*second)
	checkNs(t, "after the hold", want(e.fromLAC(0, 8, 3), cac.Pass, "late ZLB"), 8, 3)
	if n := mapCount(t, f.Objs.L2tpTunnels); n != 0 {
		t.Errorf("%d tunnel entries after the hold, want none", n)
	}
	r, err := cac.ParseReason(reason)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Stats(t).Classes[cac.L2TPICRQ].Rejected; n[r] != 4 {
		t.Errorf("l2tp-icrq rejected %v, want 4 by %s", n, reason)
	}
}

// TestL2TPUntranslated: an ICRQ refused in a tunnel the filter did not see
// set up (or whose SCCRP hides its ID) can only be dropped, and is counted
// so; what passes of such a tunnel goes unchanged.
func TestL2TPUntranslated(t *testing.T) {
	f := harness.NewFastPath(t, false)
	eg := newEgress(t, f)
	f.SetPolicy(t, harness.PolicyOf(t, "classes:\n  l2tp-icrq: {cps: 0.001, burst: 1}\n"))
	f.MustAt(t, second)
	e := newTunnel(false, 2, 9, 99)
	hidden := e.frame(false, hiddenSCCRP(e))
	mustSend(t, eg, f, hidden)
	for i, verdict := range []cac.Verdict{cac.Pass, cac.Drop, cac.Drop} {
		d, out, err := f.DecideOut(e.fromLAC(ICRQ, uint16(2+i), 1))
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != verdict || (verdict == cac.Drop && !d.Unanswered) {
			t.Errorf("ICRQ %d: %v, want %v", i, d, verdict)
		}
		checkNs(t, "untranslated ICRQ", out, uint16(2+i), 1)
	}
	if st := f.Stats(t); st.L2TPUnanswered != 2 || st.L2TPAnswered != 0 {
		t.Errorf("unanswered %d, answered %d; want 2, 0", st.L2TPUnanswered, st.L2TPAnswered)
	}
}

// checkZLB checks an answer: from the LNS to the LAC, a ZLB to the LAC's
// tunnel with ns and nr, every checksum holding.
func checkZLB(t *testing.T, e tunnelEnds, frame []byte, ns, nr uint16) {
	t.Helper()
	checkSums(t, "ZLB", frame)
	at, ok := classify.FindL2TP(frame, classify.NewPorts(harness.TestL2TPPorts, nil), true)
	if !ok {
		t.Fatalf("the answer is no L2TP message from the LNS's port: %x", frame)
	}
	src, dst := addrsOf(frame, at)
	if src != e.lns || dst != e.lac {
		t.Errorf("answer from %v to %v, want %v to %v", src, dst, e.lns, e.lac)
	}
	flags, length, id, gotNs, gotNr := l2tpHeader(frame, at)
	if flags != 0xc800|uint16(e.ver) || length != 12 || id != e.lacID || gotNs != ns || gotNr != nr {
		t.Errorf("answer flags %#x length %d id %d Ns %d Nr %d; want %#x 12 %d %d %d",
			flags, length, id, gotNs, gotNr, 0xc800|uint16(e.ver), e.lacID, ns, nr)
	}
}

// checkNs checks the sequence numbers of an L2TP frame and its checksums.
func checkNs(t *testing.T, what string, frame []byte, ns, nr uint16) {
	t.Helper()
	checkSums(t, what, frame)
	_, at := udpSum(frame)
	if _, _, _, gotNs, gotNr := l2tpHeader(frame, at); gotNs != ns || gotNr != nr {
		t.Errorf("%s: Ns %d Nr %d, want %d %d", what, gotNs, gotNr, ns, nr)
	}
}

func addrsOf(frame []byte, at classify.L2TPAt) (src, dst netip.Addr) {
	ip := frame[at.L3:]
	if at.Family == 4 {
		return netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
	}
	return netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
}
