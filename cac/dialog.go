package cac

import (
	"encoding/binary"
	"math/bits"
)

// DialogWays is how many dialogs a set of the fast path's dialog table
// holds (CAC_DIALOG_WAYS, bpf/dialog.h; docs/design.md, "Dialogs").
const DialogWays = 4

// DialogSets is the number of sets of a dialog table of at least dialogs
// dialogs: a power of two, one at least.
func DialogSets(dialogs uint32) uint32 {
	sets := (dialogs + DialogWays - 1) / DialogWays
	if sets <= 1 {
		return 1
	}
	return 1 << bits.Len32(sets-1)
}

// SameDialogTable reports whether dialog tables of a and b dialogs are
// one size: both round up to the same sets.
func SameDialogTable(a, b uint32) bool { return DialogSets(a) == DialogSets(b) }

// DialogSet is the set of a table of sets sets (a power of two) that the
// Call-ID hash callid belongs to, as dialog_set computes it: the hash's
// halves folded and multiplied, the high half of the product kept, so
// that every bit of the hash moves the set.
func DialogSet(callid uint64, sets uint32) uint32 {
	x := (callid ^ callid>>32) * 0x9e3779b97f4a7c15
	return uint32(x>>32) & (sets - 1)
}

// DialogPeer is what a dialog keeps of one of its sides (dialog_peer of
// bpf/dialog.h): the address, 16 bytes with IPv4 mapped into IPv6, folded
// to 32 bits, never 0.
func DialogPeer(addr [16]byte) uint32 {
	hi, lo := binary.LittleEndian.Uint64(addr[:8]), binary.LittleEndian.Uint64(addr[8:])
	p := uint32((hi ^ lo*0x9e3779b97f4a7c15) * 0xff51afd7ed558ccd >> 32)
	if p == 0 {
		return 1
	}
	return p
}
