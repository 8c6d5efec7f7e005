package classify

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// One walk over a SIP request's header lines, as bpf/sip.h's search for To
// headers walks them (docs/design.md, "SIP in one pass"): it reads the To
// headers and, on its way, notes what every later reader needs, the first
// Call-ID, CSeq and Via (sip_find_txn) and the first From and
// P-Asserted-Identity (sip_find_users). Every reader (toHeaders, findTxn,
// findCallID, findUsers) takes them from the index the walk leaves
// (bpf/sip_index.h) instead of walking the lines again, so that the model
// has the fast path's one walk and its bounds: SIPMaxLines lines, each
// starting before SIPScanMax; a header past them is unseen by every
// reader.
//
// Where the fast path's walk stops, the model's goes on to the same end
// and finds the same offsets, since every header is the first of its kind
// wherever the walk stops: the fast path's To search stops at an untagged
// To (and goes on for the transaction's headers after it when the request
// is an INVITE, sip_find_txn_from), its transaction search when it has all
// three, and its walk for users (sip_find_users), which the index does not
// hold, is one of its own over the same lines.

// How the To search ended, besides lineBlank, lineEnd and lineBound: at
// an untagged To (or one whose value the filter does not read), or after
// SIPMaxLines lines. Either way it claims no dialog.
const (
	toOpen = -1 - iota // the walk has not ended the To search yet
	toUntagged
	toLines
)

// headerIndex is what the walk found in a message.
type headerIndex struct {
	toEnd int  // how the To search ended: lineBlank, lineEnd, lineBound, toUntagged or toLines
	seen  bool // a To header, and every one the search read tagged
	many  bool // more than one To header before the search ended

	txn       [3]int // the first Call-ID, CSeq and Via values (findTxn's slots), 0 for none
	from, pai int    // the first From and P-Asserted-Identity values, 0 for none
}

// dialog is what sip_to_headers claims: To headers, every one tagged, and
// every header seen (the blank line, or the end of a whole datagram).
func (ix *headerIndex) dialog(fragmented bool) bool {
	switch ix.toEnd {
	case lineBlank:
		return ix.seen
	case lineEnd:
		return ix.seen && !fragmented
	}
	return false
}

// walks counts the walks over header lines, for the tests.
var walks atomic.Int64

// walkHeaders walks the header lines of m once, within the bounds of
// nextLine and SIPMaxLines. A To header line is skipped from its value
// on, as the fast path's walks skip it.
func walkHeaders(m []byte) headerIndex {
	walks.Add(1)
	ix := headerIndex{toEnd: toOpen}
	pos := 0
	for line := 0; line < SIPMaxLines; line++ {
		h, end := nextLine(m, pos)
		if end != lineHeader {
			if ix.toEnd == toOpen {
				ix.toEnd = end
			}
			return ix
		}
		if v, ok, wide := toName(m, h); ok {
			pos = v
			if ix.toEnd == toOpen {
				ix.many = ix.many || ix.seen
				if wide || !toTagged(m, v) {
					ix.toEnd = toUntagged
				} else {
					ix.seen = true
				}
			}
			continue
		}
		pos = h
		ix.note(m, h)
	}
	if ix.toEnd == toOpen {
		ix.toEnd = toLines
	}
	return ix
}

// note notes the header line at h: its value's offset in the slot of its
// kind, unless that slot is taken (txn_note, and sip_find_users's loop).
func (ix *headerIndex) note(m []byte, h int) {
	if kind, v, ok := txnHeaderAt(m, h); ok {
		if ix.txn[kind] == 0 {
			ix.txn[kind] = v
		}
		return
	}
	if kind, v, ok := userHeaderAt(m, h); ok {
		switch {
		case kind == userFrom && ix.from == 0:
			ix.from = v
		case kind == userPAI && ix.pai == 0:
			ix.pai = v
		}
	}
}

// kept is the index of the message read last, as the fast path keeps one
// a CPU (the sip_index map): the classifier's walk leaves it, and the
// readers that follow for the same message take it. It is kept with a copy
// of the message it is of, and a reader of any other bytes walks them
// (and keeps what it found): the offsets are of the bytes alone.
var kept struct {
	sync.Mutex
	ok  bool
	msg []byte
	ix  headerIndex
}

// indexOf is the index of m: the one kept, when it is of the same bytes,
// or a walk's.
func indexOf(m []byte) headerIndex {
	kept.Lock()
	if kept.ok && bytes.Equal(kept.msg, m) {
		ix := kept.ix
		kept.Unlock()
		return ix
	}
	kept.Unlock()
	ix := walkHeaders(m)
	kept.Lock()
	kept.ok, kept.msg, kept.ix = true, append(kept.msg[:0], m...), ix
	kept.Unlock()
	return ix
}
