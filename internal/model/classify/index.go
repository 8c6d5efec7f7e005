package classify

import "bytes"

// One walk over a SIP request's header lines, as bpf/sip.h's search for To
// headers walks them (docs/design.md, "SIP in one pass"): it reads the To
// headers and, on its way, notes what every later reader needs, the first
// Call-ID, CSeq and Via (sip_find_txn) and the first From and
// P-Asserted-Identity (sip_find_users). Every reader (toHeaders, findTxn,
// findCallID, findUsers) takes them from the index the walk leaves in its
// Reader (bpf/sip_index.h) instead of walking the lines again, so that the
// model has the fast path's one walk and its bounds: SIPMaxLines lines,
// each starting before SIPScanMax; a header past them is unseen by every
// reader.
//
// Where the fast path's walk stops, the model's goes on to the same end
// and finds the same offsets, since every header is the first of its kind
// wherever the walk stops: the fast path's To search stops at an untagged
// To (and goes on for the transaction's headers after it when the request
// is an INVITE, sip_find_txn_from), its transaction search when it has all
// three, and its walk for users (sip_find_users), which the index does not
// hold, is one of its own over the same lines.

// Reader reads SIP messages as the fast path does, and keeps the index of
// the message it walked last, as the program keeps one a CPU in its
// sip_index map: the classifier's walk leaves it, and the readers that
// follow for the same message (Txn, CallID, CLIOf, Answer) take it. The
// index is kept with a copy of the bytes it is of, and a reader given any
// other bytes walks them, since the offsets are of those bytes alone.
//
// The zero Reader is ready to use. A Reader is not safe for concurrent
// use; the package's functions of the same names each use a Reader of
// their own.
type Reader struct {
	kept  bool
	msg   []byte // a copy of the message indexed, never written once kept
	ix    headerIndex
	walks int
}

// Walks is how many walks over header lines r has made: one a message
// whose headers a reader asked for, while the classifier and the readers
// after it ask about the same message.
func (r *Reader) Walks() int { return r.walks }

// index is the index of m: the one kept, when it is of the same bytes,
// or a walk's, which r keeps.
func (r *Reader) index(m []byte) *headerIndex {
	if r.kept && bytes.Equal(r.msg, m) {
		return &r.ix
	}
	r.walks++
	// A fresh copy, never one written over: a copy of r (a Model copied)
	// shares the bytes its index is of.
	r.kept, r.msg, r.ix = true, bytes.Clone(m), walkHeaders(m)
	return &r.ix
}

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

// walkHeaders walks the header lines of m once, within the bounds of
// nextLine and SIPMaxLines. A To header line is skipped from its value
// on, as the fast path's walks skip it.
func walkHeaders(m []byte) headerIndex {
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
