package admission

import (
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	"github.com/xdpcac/xdpcac/internal/model/l2tp"
)

// The fast path's L2TP tunnels in the model (docs/design.md "Refusing an
// ICRQ"): the verdict's calls of l2tp_from_lac in bpf/verdict.h, and the
// egress program's l2tp_from_lns. The frame given to Decide and Egress is
// changed as the programs change it.

// table returns the model's tunnel table, made on first use.
func (m *Model) table() l2tp.Table {
	if m.tunnels == nil {
		m.tunnels = l2tp.Table{}
	}
	return m.tunnels
}

// l2tpPass translates a LAC's control message that opens nothing.
func (m *Model) l2tpPass(frame []byte, now uint64) {
	if at, ok := classify.FindL2TP(frame, m.Ports, false); ok {
		m.table().FromLAC(frame, at, now).Pass()
	}
}

// l2tpCheck looks at an ICRQ before admission. A copy of a message passed
// or of the ICRQ refused last is decided here (done); a new ICRQ of a
// translated tunnel (the LAC's next, or one past it) returns its tunnel
// for l2tpJudged, any other nil.
func (m *Model) l2tpCheck(d *Decision, frame []byte, now uint64) (lac *l2tp.LAC, done bool) {
	if d.Kind != cac.Session || d.Class != cac.L2TPICRQ {
		return nil, false
	}
	at, ok := classify.FindL2TP(frame, m.Ports, false)
	if !ok {
		return nil, false
	}
	lac = m.table().FromLAC(frame, at, now)
	check, reason := lac.Check()
	switch check {
	case l2tp.Copy:
		d.Retransmit, d.Uncharged = true, true
		return nil, true
	case l2tp.Again:
		d.Retransmit, d.Rejected, d.Reason = true, true, reason
		d.Answered = lac.Answer()
		d.Unanswered = !d.Answered
		d.Verdict = cac.Drop
		if d.Answered {
			d.Verdict = cac.TX
		}
		return nil, true
	case l2tp.New, l2tp.Ahead:
		return lac, false
	}
	return nil, false
}

// l2tpJudged finishes an ICRQ admission judged: one admitted goes on
// translated; one refused is answered if its tunnel is translated, and
// counted unanswered if not.
func (m *Model) l2tpJudged(d *Decision, lac *l2tp.LAC) {
	switch {
	case !d.Rejected:
		if lac != nil {
			lac.Pass()
		}
	case lac != nil && !lac.Ahead() && lac.Refuse(d.Reason):
		d.Answered = true
	default:
		d.Unanswered = true
	}
}
