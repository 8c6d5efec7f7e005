package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
)

// Dialogs is how many dialogs the dialog table m holds.
func Dialogs(m *ebpf.Map) uint32 { return m.MaxEntries() * cac.DialogWays }

// SizeDialogs sizes the dialog table of spec, an XDP or egress object, to
// hold dialogs dialogs (rounded up to a power of two sets), and sets the
// mask its programs index it with: the two must agree, so nothing else
// sizes the table.
func SizeDialogs(spec *ebpf.CollectionSpec, dialogs uint32) error {
	m, v := spec.Maps[bpf.XdpMapDialogs], spec.Variables[bpf.XdpVarDialogMask]
	if m == nil || v == nil {
		return fmt.Errorf("size the dialog table: the object has no %s map or %s variable", bpf.XdpMapDialogs, bpf.XdpVarDialogMask)
	}
	sets := cac.DialogSets(dialogs)
	m.MaxEntries = sets
	if err := v.Set(sets - 1); err != nil {
		return fmt.Errorf("size the dialog table: %w", err)
	}
	return nil
}

// DialogKeys are the Call-ID hashes the dialog table m holds.
func DialogKeys(m *ebpf.Map) ([]uint64, error) {
	var (
		keys []uint64
		k    uint32
		s    bpf.XdpCacDialogSet
	)
	it := m.Iterate()
	for it.Next(&k, &s) {
		for _, d := range s.Way {
			if d.Callid != 0 {
				keys = append(keys, d.Callid)
			}
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read the dialog table: %w", err)
	}
	return keys, nil
}

// LookupDialog is the dialog of the Call-ID hash callid in the dialog
// table m, and whether it holds one.
func LookupDialog(m *ebpf.Map, callid uint64) (bpf.XdpCacDialog, bool, error) {
	var s bpf.XdpCacDialogSet
	if err := m.Lookup(cac.DialogSet(callid, m.MaxEntries()), &s); err != nil {
		return bpf.XdpCacDialog{}, false, fmt.Errorf("read the dialog table: %w", err)
	}
	for _, d := range s.Way {
		if callid != 0 && d.Callid == callid {
			return d, true, nil
		}
	}
	return bpf.XdpCacDialog{}, false, nil
}

// ForgetDialog removes the dialog of callid from the dialog table m.
func ForgetDialog(m *ebpf.Map, callid uint64) error {
	i := cac.DialogSet(callid, m.MaxEntries())
	var s bpf.XdpCacDialogSet
	if err := m.Lookup(i, &s); err != nil {
		return fmt.Errorf("read the dialog table: %w", err)
	}
	for w := range s.Way {
		if callid != 0 && s.Way[w].Callid == callid {
			s.Way[w] = bpf.XdpCacDialog{}
		}
	}
	if err := m.Update(i, &s, ebpf.UpdateExist); err != nil {
		return fmt.Errorf("write the dialog table: %w", err)
	}
	return nil
}
