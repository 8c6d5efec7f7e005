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
