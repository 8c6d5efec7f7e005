package classify

// The header that names a dialog, found and hashed as bpf/sip_hdr.h does:
// the dialog table knows a dialog by the hash of its Call-ID.

const (
	sipHashMax = 256 // bytes of a value that are hashed (SIP_HASH_MAX)
	hashCut    = 1   // HASH_CUT: the low bit of a hash, set for a value cut at sipHashMax
	fnvOffset  = 0xcbf29ce484222325
	fnvPrime   = 0x100000001b3
)

// nameAt is name_at: the bytes at h spell name in any case (each byte
// or-ed with 0x20, as the fast path compares), then spaces and a colon.
func nameAt(m []byte, h int, name string) (int, bool) {
	for i := 0; i < len(name); i++ {
		if at(m, h+i)|0x20 != int(name[i]) {
			return 0, false
		}
	}
	j := skipSP(m, h+len(name))
	if at(m, j) != ':' {
		return 0, false
	}
	return j + 1, true
}

// findCallID is sip_find_callid: the value offset of the first Call-ID
// header (or compact i) among the header lines, the index's Call-ID slot.
func (r *Reader) findCallID(m []byte) (int, bool) {
	v := r.findTxn(m)[txnCallID]
	return v, v != 0
}

// hashValue is sip_hash_value: FNV-1a over the little-endian 8-byte words
// of the value at v (the last zero-padded), spaces skipped, to the end of
// its line or sipHashMax bytes, with the low bit set when it was cut
// there; never 0.
func hashValue(m []byte, v int) uint64 {
	if v > SIPScanMax+16 {
		return 1 | hashCut
	}
	v = skipSP(m, v)
	h := uint64(fnvOffset)
	var w uint64
	n := 0
	cut := uint64(hashCut)
	for i := 0; i < sipHashMax; i++ {
		c := at(m, v+i)
		if c < 0 || c == '\r' || c == '\n' {
			cut = 0
			break
		}
		w |= uint64(c) << (8 * n)
		if n++; n == 8 {
			h, w, n = (h^w)*fnvPrime, 0, 0
		}
	}
	if n > 0 {
		h = (h ^ w) * fnvPrime
	}
	h = h&^hashCut | cut
	if h == 0 {
		return 2
	}
	return h
}

// CallID is the hash of a SIP message's Call-ID, 0 without one in sight.
func CallID(m []byte) uint64 {
	var r Reader
	return r.CallID(m)
}

// CallID is the package's CallID, read by r.
func (r *Reader) CallID(m []byte) uint64 {
	if v, ok := r.findCallID(m); ok {
		return hashValue(m, v)
	}
	return 0
}
