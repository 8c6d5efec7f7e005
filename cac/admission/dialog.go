package admission

// The dialog table of bpf/dialog.h: the dialogs whose INVITE the filter
// admitted, by the hash of their Call-ID. The fast path's table is an LRU;
// the model's forgets nothing, so a test keeps within its size.
type dialogTable map[uint64]bool

func (t dialogTable) known(callid uint64) bool { return callid != 0 && t[callid] }

// learnDialog remembers the dialog of an INVITE, as dialog_admitted does.
func (m *Model) learnDialog(callid, now uint64) {
	if callid == 0 {
		return
	}
	if m.dialogs == nil {
		m.dialogs = dialogTable{}
	}
	m.dialogs[callid] = true
}
