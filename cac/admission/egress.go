package admission

import (
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/classify"
)

// Egress is the egress program bpf/tc_dialogs.c: a frame the SIP server
// behind the filter sends out that is an INVITE out of dialog, over UDP to
// or from a SIP port, puts its Call-ID in the dialog table, so that the
// requests of that dialog coming back pass uncharged (docs/design.md,
// "Dialogs the server opens"). It never changes a verdict: egress drops
// nothing, and charges nothing. A dialog the table knows keeps its entry,
// as egress_learn inserts only what is not there: a proxy sends out the
// INVITE it admitted with the same Call-ID, and what the filter recorded
// of it stays.
//
// An L2TP control message the LNS sends goes to the tunnel table, and may
// have its Nr translated in frame (docs/design.md "Refusing an ICRQ").
func (m *Model) Egress(frame []byte, now uint64) {
	if at, ok := classify.FindL2TP(frame, m.Ports, true); ok {
		m.table().FromLNS(frame, at, now)
		return
	}
	r, msg := classify.ClassifySIPEgress(frame, m.Ports)
	if r.Kind != cac.Session || r.Class != cac.SIPInvite {
		return
	}
	if callid := classify.CallID(msg); !m.dialogs.known(callid) {
		m.learnDialog(callid, now)
	}
}
