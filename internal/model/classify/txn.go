package classify

import "encoding/binary"

// An INVITE's transaction, found and hashed as bpf/sip_txn.h does: the
// hash of its Call-ID, CSeq and top Via, which a retransmission repeats,
// and of the address it came from.

// The slots of findTxn's offsets.
const (
	txnCallID = iota
	txnCSeq
	txnVia
)

// txnHeaderAt is txn_header_at: which of the three headers the line at h
// is, and its value's offset.
func txnHeaderAt(m []byte, h int) (kind, v int, ok bool) {
	if h > SIPScanMax {
		return 0, 0, false
	}
	for _, n := range []struct {
		name string
		kind int
	}{{"call-id", txnCallID}, {"i", txnCallID}, {"cseq", txnCSeq}, {"via", txnVia}, {"v", txnVia}} {
		if v, ok := nameAt(m, h, n.name); ok {
			return n.kind, v, true
		}
	}
	return 0, 0, false
}

// findTxn is sip_find_txn: the value offsets of the first Call-ID, CSeq
// and Via headers among the header lines, 0 for one not found, as the
// walk over them indexed them.
func (r *Reader) findTxn(m []byte) [3]int { return r.index(m).txn }

// txnMix is txn_mix: one more header's hash folded in.
func txnMix(h, v uint64) uint64 { return (h ^ v) * fnvPrime }

// cseqNumber is sip_cseq_number: what a transaction takes of the CSeq value
// at s, its number (its bytes up to a blank or the line's end, at most ten)
// and not its method, so that a CANCEL names the INVITE's transaction;
// hashCut for a value with no number or a longer one.
func cseqNumber(m []byte, s int) uint64 {
	if s > SIPScanMax+16 {
		return hashCut
	}
	s = skipSP(m, s)
	var w1, w2 uint64
	n := 0
	for ; n < 11; n++ {
		c := at(m, s+n)
		if c < 0 || isSP(c) || c == '\r' || c == '\n' {
			break
		}
		if n < 8 {
			w1 |= uint64(c) << (8 * n)
		} else {
			w2 |= uint64(c) << (8 * (n - 8))
		}
	}
	if n == 0 || n > 10 {
		return hashCut
	}
	h := (w1 ^ w2*0x9e3779b97f4a7c15) * 0xff51afd7ed558ccd &^ hashCut
	if h == 0 {
		return 2
	}
	return h
}

// Txn is sip_txn: the hash of a SIP request's Call-ID (0 without one) and
// of its transaction (0 unless all three headers were found).
func Txn(m []byte) (callid, txn uint64) {
	var r Reader
	return r.Txn(m)
}

// Txn is the package's Txn, read by r.
func (r *Reader) Txn(m []byte) (callid, txn uint64) {
	at := r.findTxn(m)
	if at[txnCallID] != 0 {
		callid = hashValue(m, at[txnCallID])
	}
	if at[txnCallID] == 0 || at[txnCSeq] == 0 || at[txnVia] == 0 {
		return callid, 0
	}
	cseq, via := cseqNumber(m, at[txnCSeq]), hashValue(m, at[txnVia])
	// A header cut at sipHashMax names no transaction.
	if (callid|cseq|via)&hashCut != 0 {
		return callid, 0
	}
	h := txnMix(fnvOffset, callid)
	h = txnMix(h, cseq)
	h = txnMix(h, via)
	if h == 0 {
		return callid, 1
	}
	return callid, h
}

// FromSource is msg_txn's last step: a transaction is its sender's, so
// the source address (IPv4 mapped into IPv6, as the account key is) is
// folded in, its two halves as little-endian words.
func FromSource(txn uint64, s Source) uint64 {
	if txn == 0 {
		return 0
	}
	a := s.Mapped()
	txn = txnMix(txnMix(txn, binary.LittleEndian.Uint64(a[:8])), binary.LittleEndian.Uint64(a[8:]))
	if txn == 0 {
		return 1
	}
	return txn
}
