package admission

import "github.com/xdpcac/xdpcac/cac"

// The dialog table of bpf/dialog.h: the dialogs whose INVITE the filter
// admitted, by the hash of their Call-ID, each with its INVITE's
// transaction. The fast path's table is an LRU; the model's forgets
// nothing, so a test keeps within its size.
type dialogTable map[uint64]*dialog

type dialog struct {
	inviteNS    uint64
	txn         uint64
	retransmits uint32
}

// The retransmission bounds of bpf/shared.h and bpf/dialog.h.
const (
	TimerBNS             = 32_000_000_000 // CAC_TIMER_B_NS
	RetransmitsMax       = 10             // CAC_RETRANSMITS_MAX
	RefusedNewPerSecond  = 512            // REFUSED_NEW_PER_SECOND, per CPU
	nanosecondsPerSecond = 1_000_000_000
)

func (t dialogTable) known(callid uint64) bool { return callid != 0 && t[callid] != nil }

// learnDialog remembers the dialog of an INVITE whose transaction is not
// known.
func (m *Model) learnDialog(callid, now uint64) { m.learnInvite(callid, 0, now) }

// learnInvite remembers an admitted INVITE's dialog and transaction, as
// invite_admitted does.
func (m *Model) learnInvite(callid, txn, now uint64) {
	if callid == 0 {
		return
	}
	if m.dialogs == nil {
		m.dialogs = dialogTable{}
	}
	// A replay admitted again past its allowance leaves the entry be.
	if d := m.dialogs[callid]; d != nil && txn != 0 && d.txn == txn && now-d.inviteNS < TimerBNS {
		return
	}
	m.dialogs[callid] = &dialog{inviteNS: now, txn: txn}
}

// refusedTable is the fast path's table of refused INVITE transactions,
// with the budget of new entries it takes a second (the model is one
// CPU).
type refusedTable struct {
	txns         map[uint64]refusedTxn
	second, used uint64
}

type refusedTxn struct {
	refusedNS uint64
	reason    cac.Reason
}

// refuse remembers a refused transaction, as invite_refused does.
func (t *refusedTable) refuse(txn, now uint64, reason cac.Reason) {
	if s := now / nanosecondsPerSecond; s != t.second {
		t.second, t.used = s, 0
	}
	if t.used >= RefusedNewPerSecond || txn == 0 {
		return
	}
	t.used++
	if t.txns == nil {
		t.txns = map[uint64]refusedTxn{}
	}
	t.txns[txn] = refusedTxn{refusedNS: now, reason: reason}
}

// retransmit is invite_retransmit: whether an INVITE of callid and txn at
// now repeats a transaction seen within Timer B, and if so whether it was
// refused and why.
func (m *Model) retransmit(callid, txn, now uint64) (again, refused bool, reason cac.Reason) {
	if txn == 0 {
		return false, false, 0
	}
	if d := m.dialogs[callid]; d != nil && d.txn == txn && now-d.inviteNS < TimerBNS {
		if d.retransmits >= RetransmitsMax {
			return false, false, 0
		}
		d.retransmits++
		return true, false, 0
	}
	if r, ok := m.refused.txns[txn]; ok && now-r.refusedNS < TimerBNS {
		return true, true, r.reason
	}
	return false, false, 0
}
