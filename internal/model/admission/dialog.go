package admission

import "github.com/xdpcac/xdpcac/cac"

// The dialog table of bpf/dialog.h: the dialogs whose INVITE the filter
// admitted or the server sent, each with its INVITE's transaction, in
// sets of cac.DialogWays by the hash of their Call-ID. A new dialog takes
// a free way of its set, or else the way of its oldest INVITE, as
// dialog_way chooses.
type dialogTable struct {
	sets uint32
	set  map[uint32]*[cac.DialogWays]dialog
}

type dialog struct {
	callid      uint64
	inviteNS    uint64
	txn         uint64
	retransmits uint32
	// The dialog's two sides, as classify.Source.Peer folds them: the
	// caller of the INVITE the filter admitted, the callee the server
	// sent an INVITE of the dialog to; 0 for one not known.
	caller, callee uint32
	tatNS          uint64 // the dialog's bucket, as dialog_take keeps it
	answered       bool   // DIALOG_ANSWERED: the server answered its INVITE with a 2xx
}

// The retransmission bounds of bpf/shared.h and bpf/dialog.h.
const (
	TimerBNS             = 32_000_000_000    // CAC_TIMER_B_NS
	CancelNS             = 180_000_000_000   // CAC_CANCEL_NS
	RetransmitsMax       = 10                // CAC_RETRANSMITS_MAX
	DialogCPS            = 20                // CAC_DIALOG_CPS: a verified dialog's requests a second
	DialogBurst          = 100               // CAC_DIALOG_BURST: ... and at once
	DialogIdleNS         = 3_600_000_000_000 // CAC_DIALOG_IDLE_NS: silent this long, a dialog is not verified
	RefusedNewPerSecond  = 512               // REFUSED_NEW_PER_SECOND, per CPU
	nanosecondsPerSecond = 1_000_000_000
	defaultDialogSets    = 16384 // the dialogs map's max_entries in bpf/maps.h
)

// way is dialog_way: the way of callid's set that holds it, or else the
// one a new dialog of callid takes.
func (t *dialogTable) way(callid uint64) *dialog {
	if t.set == nil {
		if t.sets == 0 {
			t.sets = defaultDialogSets
		}
		t.set = map[uint32]*[cac.DialogWays]dialog{}
	}
	i := cac.DialogSet(callid, t.sets)
	s := t.set[i]
	if s == nil {
		s = new([cac.DialogWays]dialog)
		t.set[i] = s
	}
	v := &s[0]
	for w := range s {
		d := &s[w]
		if d.callid == callid {
			return d
		}
		if v.callid != 0 && (d.callid == 0 || d.inviteNS < v.inviteNS) {
			v = d
		}
	}
	return v
}

// find is the dialog of callid, or nil.
func (t *dialogTable) find(callid uint64) *dialog {
	if callid == 0 {
		return nil
	}
	if d := t.way(callid); d.callid == callid {
		return d
	}
	return nil
}

// verified is dialog_verified: callid names a dialog the table holds, peer
// is one of its sides, it has not been silent for DialogIdleNS, and its
// bucket holds a request at now.
func (t *dialogTable) verified(callid uint64, peer uint32, now uint64) bool {
	d := t.find(callid)
	if d == nil || peer == 0 || (d.caller != peer && d.callee != peer) {
		return false
	}
	if last := max(d.tatNS, d.inviteNS); now > last && now-last >= DialogIdleNS {
		return false
	}
	return d.take(now)
}

// take is dialog_take: one request from the dialog's bucket (GCRA).
func (d *dialog) take(now uint64) bool {
	const interval = nanosecondsPerSecond / DialogCPS
	tat := max(d.tatNS, now)
	if tat-now > (DialogBurst-1)*interval {
		return false
	}
	d.tatNS = tat + interval
	return true
}

// SetDialogTable sizes the model's dialog table as the fast path's: sets
// sets of cac.DialogWays (the dialogs map's max_entries). It forgets the
// dialogs the table held.
func (m *Model) SetDialogTable(sets uint32) { m.dialogs = dialogTable{sets: sets} }

// learnDialog remembers the dialog of an INVITE the server sent toward
// callee, as egress_learn does: a dialog the table holds keeps its entry
// but takes callee as its other side.
func (m *Model) learnDialog(callid, now uint64, callee uint32) {
	if callid == 0 {
		return
	}
	if d := m.dialogs.way(callid); d.callid != callid {
		*d = dialog{callid: callid, inviteNS: now, callee: callee}
	} else {
		d.callee = callee
	}
}

// learnInvite remembers an admitted INVITE's dialog and transaction, from
// caller, as invite_admitted does.
func (m *Model) learnInvite(callid, txn, now uint64, caller uint32) {
	if callid == 0 {
		return
	}
	d := m.dialogs.way(callid)
	// A replay admitted again past its allowance leaves the entry be.
	if d.callid == callid && txn != 0 && d.txn == txn && now-d.inviteNS < TimerBNS {
		return
	}
	// Another INVITE of a known dialog keeps the sides first learnt.
	if d.callid == callid && d.caller != 0 {
		d.inviteNS, d.txn, d.retransmits = now, txn, 0
		return
	}
	callee := uint32(0)
	if d.callid == callid {
		callee = d.callee
	}
	*d = dialog{callid: callid, inviteNS: now, txn: txn, caller: caller, callee: callee}
}

// answer is egress_answer: a 2xx to a dialog's INVITE marks it answered,
// and a refusal of one not answered forgets it.
func (m *Model) answer(msg []byte, code int) {
	callid, invite, ok := m.sip.Answer(msg)
	if code < 200 || !ok || !invite {
		return
	}
	d := m.dialogs.find(callid)
	switch {
	case d == nil:
	case code < 300:
		d.answered = true
	case !d.answered:
		d.callid = 0 // the way is free
	}
}

// cancels is invite_cancel: a CANCEL of callid and txn at now cancels an
// INVITE the filter admitted, within the allowance its copies share.
func (m *Model) cancels(callid, txn, now uint64) bool {
	if txn == 0 {
		return false
	}
	return m.dialogs.find(callid).admittedCopy(txn, now, CancelNS) > 0
}

// admittedCopy is admitted_copy: -1 when a message of txn at now is no
// copy of d's admitted INVITE within window, 1 for one that passes, 0 once
// the INVITE's allowance of copies is spent. d may be nil.
func (d *dialog) admittedCopy(txn, now, window uint64) int {
	if d == nil || d.txn != txn || now-d.inviteNS >= window {
		return -1
	}
	if d.retransmits >= RetransmitsMax {
		return 0
	}
	d.retransmits++
	return 1
}

// refusedTable is the fast path's table of refused INVITE transactions,
// by Call-ID, with the budget of new entries it takes a second (the model
// is one CPU).
type refusedTable struct {
	calls        map[uint64]refusedTxn
	second, used uint64
}

type refusedTxn struct {
	txn       uint64
	refusedNS uint64
	reason    cac.Reason
}

// refuse remembers a refused transaction of callid, as invite_refused
// does: in place of one refused before of the same Call-ID.
func (t *refusedTable) refuse(callid, txn, now uint64, reason cac.Reason) {
	if s := now / nanosecondsPerSecond; s != t.second {
		t.second, t.used = s, 0
	}
	if t.used >= RefusedNewPerSecond || txn == 0 {
		return
	}
	t.used++
	if t.calls == nil {
		t.calls = map[uint64]refusedTxn{}
	}
	t.calls[callid] = refusedTxn{txn: txn, refusedNS: now, reason: reason}
}

// retransmit is invite_retransmit: whether an INVITE of callid and txn at
// now repeats a transaction seen within Timer B, and if so whether it was
// refused and why.
func (m *Model) retransmit(callid, txn, now uint64) (again, refused bool, reason cac.Reason) {
	if txn == 0 {
		return false, false, 0
	}
	if copy := m.dialogs.find(callid).admittedCopy(txn, now, TimerBNS); copy >= 0 {
		return copy > 0, false, 0
	}
	if r, ok := m.refused.calls[callid]; ok && r.txn == txn && now-r.refusedNS < TimerBNS {
		return true, true, r.reason
	}
	return false, false, 0
}
