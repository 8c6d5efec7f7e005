package fastpath

import (
	"math/rand/v2"
	"testing"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestL2TPDifferential holds the fast path's L2TP translation to its Go
// twin (internal/model/l2tp) over random conversations on a few tunnels
// (v2 over IPv4, v3 over IPv6, two tunnels from one LAC address on two
// ports): the LNS's SCCRPs, some with their ID hidden; the LAC's ICRQs
// with the next Ns, a copy's older one or one ahead; other messages and
// ZLBs both ways; StopCCNs from either side; the clock moving in small
// steps and now and then past the StopCCN hold or the idle limit; an ICRQ
// limit tight enough that many are refused. The XDP program, the egress
// program and the model must agree on every verdict, counter and byte.
func TestL2TPDifferential(t *testing.T) {
	f := harness.NewFastPath(t, false)
	eg := newEgress(t, f)
	f.SetPolicy(t, harness.PolicyOf(t, "classes:\n  l2tp-icrq: {cps: 2, burst: 3}\n"))
	ends := []tunnelEnds{newTunnel(false, 2, 7, 42), newTunnel(true, 3, 0x10002, 0x30004), newTunnel(false, 2, 8, 43)}
	ends[2].lacPort = 1702
	lacNext := make([]uint16, len(ends))
	lnsNext := make([]uint16, len(ends))
	rng := rand.New(rand.NewPCG(14, 2661))
	now := second
	f.MustAt(t, now)
	var refused, answered int
	for i := 0; i < 3000; i++ {
		n := rng.IntN(len(ends))
		e := ends[n]
		// Mostly the LAC's next Ns; now and then a copy or one ahead.
		ns := lacNext[n]
		switch r := rng.IntN(10); {
		case r == 0:
			ns -= uint16(1 + rng.IntN(3))
		case r == 1:
			ns += uint16(1 + rng.IntN(3))
		}
		var err error
		switch op := rng.IntN(20); {
		case op == 0:
			lacNext[n], lnsNext[n] = 1, 1
			l := L2TP{Version: e.ver, MsgType: SCCRP, ID: e.lacID, Nr: 1, AssignedID: e.lnsID, HiddenID: rng.IntN(4) == 0}
			_, err = eg.sendOut(f, e.frame(false, l))
		case op < 8:
			d, _, derr := f.DecideOut(e.fromLAC(ICRQ, ns, lnsNext[n]))
			err = derr
			if ns == lacNext[n] {
				lacNext[n]++
			}
			if d.Rejected {
				refused++
			}
			if d.Answered {
				answered++
			}
		case op < 11:
			typ := []uint16{0, msgICCN, msgHello, msgSCCCN}[rng.IntN(4)]
			_, _, err = f.DecideOut(e.fromLAC(typ, ns, lnsNext[n]))
			if typ != 0 && ns == lacNext[n] {
				lacNext[n]++
			}
		case op < 15:
			typ := []uint16{0, ICRP, msgHello}[rng.IntN(3)]
			nr := lacNext[n] - uint16(rng.IntN(3))
			_, err = eg.sendOut(f, e.fromLNS(typ, lnsNext[n], nr))
			if typ != 0 {
				lnsNext[n]++
			}
		case op == 15:
			if rng.IntN(2) == 0 {
				_, _, err = f.DecideOut(e.fromLAC(msgStopCCN, ns, lnsNext[n]))
			} else {
				_, err = eg.sendOut(f, e.fromLNS(msgStopCCN, lnsNext[n], lacNext[n]))
			}
		default:
			step := uint64(rng.IntN(2000)) * 1e6
			switch rng.IntN(40) {
			case 0:
				step = 61 * second // past a StopCCN's hold
			case 1:
				step = 601 * second // past the idle limit
			}
			now += step
			f.MustAt(t, now)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	st := f.Stats(t)
	t.Logf("%d ICRQs refused, %d answered; counters: answered %d, copies %d, unanswered %d",
		refused, answered, st.L2TPAnswered, st.L2TPRetransmits, st.L2TPUnanswered)
	if answered == 0 || st.L2TPUnanswered == 0 || st.L2TPRetransmits == 0 {
		t.Errorf("the conversations never reached every case: answered %d, unanswered %d, copies %d",
			answered, st.L2TPUnanswered, st.L2TPRetransmits)
	}
}
