package classify

import (
	"bytes"
	"encoding/binary"

	"github.com/xdpcac/xdpcac/cac"
)

// The bounds of the SIP search, as in bpf/sip_msg.h. A message that runs
// out of them is taken for a new dialog: charged, never waved through.
const (
	SIPScanMax  = 2048 // the To header must start before this offset
	SIPMaxLines = 64   // ... and be among this many header lines
	SIPToMax    = 256  // its tag must start within this many bytes of the colon
	SIPToSteps  = 32   // ... and its value take at most this many steps to read (toTagged)
	SIPWSMax    = 4    // spaces or tabs allowed around ':', ';' and '='
	SIPLeadMax  = 2048 // leading SP, HT, NUL, CR and LF bytes skipped before the first line

	sipReadLimit = SIPScanMax + SIPToMax + 64 // SIP_READ_LIMIT: no read of a To value goes past it
)

// classifySIP reads a message as the most lenient server behind the filter
// would (docs/design.md, "Read as the receiver reads"): the bytes Kamailio
// skips before the first line skipped, the method in any letter case and
// ended by a space or a tab, every first line that is not a response a
// request (an unknown one sip-other); only STUN and keep-alives are none.
func (r *Reader) classifySIP(m []byte, fragmented bool) (Result, []byte) {
	if isSTUN(m, fragmented) {
		return kind(cac.Other), nil
	}
	skip := 0
	for skip < SIPLeadMax && skip < len(m) && isLead(m[skip]) {
		skip++
	}
	if skip == len(m) && !fragmented {
		return kind(cac.Other), nil // a keep-alive
	}
	if skip < len(m) && isLead(m[skip]) {
		return kind(cac.Malformed), nil // more leading bytes than the bound
	}
	odd := skip > 0
	m = m[skip:]
	var c cac.Class
	switch {
	case len(m) < 8:
		// A first fragment that ends within a word of the method: the
		// method shows only with the blank that ends it, and only INVITE
		// is short enough to be one of the three. One that shows none is
		// malformed; a whole datagram so short is no request.
		if !fragmented {
			return kind(cac.Other), nil
		}
		end := bytes.IndexAny(m, " \t")
		switch {
		case end <= 0:
			return kind(cac.Malformed), nil
		case end == 6 && foldPrefix(m, "INVITE"):
			c, odd = cac.SIPInvite, true
		default:
			c, odd = cac.SIPOther, odd || !isToken(m[0])
		}
	case foldPrefix(m, "REGISTER") && len(m) == 8 && fragmented:
		// The blank that ends REGISTER is its ninth byte: a first
		// fragment that ends before it does not show the method.
		return kind(cac.Malformed), nil
	case methodIs(m, "INVITE"):
		c, odd = cac.SIPInvite, odd || !bytes.HasPrefix(m, []byte("INVITE "))
	case methodIs(m, "OPTIONS"):
		c, odd = cac.SIPOptions, odd || !bytes.HasPrefix(m, []byte("OPTIONS "))
	case methodIs(m, "REGISTER"):
		// Never in a dialog (RFC 3261 §10.2): a To tag changes nothing
		// for a registrar, so it changes nothing here.
		return Result{Kind: cac.Session, Class: cac.SIPRegister, Odd: odd || !bytes.HasPrefix(m, []byte("REGISTER "))}, m
	case foldPrefix(m, "SIP/2.0 "):
		return kind(cac.Other), m // a response: ResponseCode reads its code
	default:
		// Any other first line is a request to Kamailio: an unknown
		// method, or none it can name.
		c, odd = cac.SIPOther, odd || !isToken(m[0])
	}
	dialog, many := r.toHeaders(m, fragmented)
	odd = odd || many
	if dialog {
		return Result{Kind: cac.InDialog, Odd: odd}, m
	}
	return Result{Kind: cac.Session, Class: c, Odd: odd}, m
}

// ResponseCode is sip_response of bpf/sip.h: the status code of a response
// message (three digits and a space after "SIP/2.0 "), 0 for anything else.
func ResponseCode(m []byte) int {
	if len(m) < 12 || !foldPrefix(m, "SIP/2.0 ") {
		return 0
	}
	code := 0
	for _, c := range m[8:11] {
		if c < '0' || c > '9' {
			return 0
		}
		code = code*10 + int(c-'0')
	}
	if m[11] != ' ' || code < 100 || code > 699 {
		return 0
	}
	return code
}

// Answer is what the egress program reads of a final answer the server
// sends (egress_answer of bpf/dialog_learn.h): the hash of its Call-ID,
// and whether its CSeq names INVITE. ok is false without both headers.
func Answer(m []byte) (callid uint64, invite, ok bool) {
	var r Reader
	return r.Answer(m)
}

// Answer is the package's Answer, read by r.
func (r *Reader) Answer(m []byte) (callid uint64, invite, ok bool) {
	at := r.findTxn(m)
	if at[txnCallID] == 0 || at[txnCSeq] == 0 {
		return 0, false, false
	}
	return hashValue(m, at[txnCallID]), cseqInvite(m, at[txnCSeq]), true
}

// cseqInvite is cseq_invite: the CSeq value at s names INVITE, in any case.
func cseqInvite(m []byte, s int) bool {
	if s > SIPScanMax+16 {
		return false
	}
	s = skipSP(m, s)
	digits := 0
	for ; digits < 10; digits++ {
		if c := at(m, s); c < '0' || c > '9' {
			break
		}
		s++
	}
	num := s
	s = skipSP(m, s)
	if digits == 0 || s == num || s+8 > len(m) {
		return false
	}
	c := at(m, s+6)
	return foldPrefix(m[s:], "INVITE") && (c < 0 || isSP(c) || c == '\r' || c == '\n')
}

// isLead reports whether c is a byte Kamailio skips before a first line.
func isLead(c byte) bool { return c == ' ' || c == '\t' || c == 0 || c == '\r' || c == '\n' }

// methodIs reports whether the first line's method is w (upper case) in any
// letter case, ended by a space or a tab.
func methodIs(m []byte, w string) bool {
	return foldPrefix(m, w) && isSP(at(m, len(w)))
}

// isSTUN reports whether a whole datagram is a STUN message (RFC 5389 §6):
// the top two bits zero, the magic cookie, and a length, a multiple of
// four, that says where the datagram ends.
func isSTUN(m []byte, fragmented bool) bool {
	if fragmented || len(m) < 20 || m[0]&0xc0 != 0 {
		return false
	}
	n := int(be16(m[2:]))
	return binary.BigEndian.Uint32(m[4:]) == 0x2112a442 && n%4 == 0 && n+20 == len(m)
}

// IsCancel reports whether a SIP request is a CANCEL, its method in any
// letter case and ended by a blank (RESULT_CANCEL of bpf/sip.h).
func IsCancel(m []byte) bool { return methodIs(m, "CANCEL") }

// IsACK reports whether a SIP request is an ACK, its method in any letter
// case (is_ack of bpf/egress.h).
func IsACK(m []byte) bool { return foldPrefix(m, "ACK ") }

// foldPrefix reports whether m starts with the upper-case ASCII word w in
// any letter case; other bytes match exactly.
func foldPrefix(m []byte, w string) bool {
	if len(m) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := m[i]
		if w[i] >= 'A' && w[i] <= 'Z' {
			c &^= 0x20
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// isToken reports whether c may start a method (RFC 3261 §25.1 token).
func isToken(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("-.!%*_+`'~"), c) >= 0
}

// toHeaders is what sip_to_headers makes of a request's To headers: a
// dialog only when there is one, every To header has a tag, and every
// header was seen (the blank line, or the end of a whole datagram) within
// the bounds. Servers disagree on which of several To headers counts, so
// one untagged To makes a new dialog: the reading that charges. many
// reports more than one To header. The To headers are read by the one
// walk over the header lines (walkHeaders), which indexes on its way what
// the readers after it need.
func (r *Reader) toHeaders(m []byte, fragmented bool) (dialog, many bool) {
	ix := r.index(m)
	return ix.dialog(fragmented), ix.many
}

// How a search for the next header line ended, as SIP_NO_TO, SIP_END and
// SIP_BOUND of bpf/sip_msg.h.
const (
	lineHeader = iota
	lineBlank
	lineEnd
	lineBound
)

// nextLine finds the header line after the first newline at or past pos,
// if it starts before SIPScanMax and the message's end. Without one, the
// search ended at the end of a message shorter than SIPScanMax (lineEnd),
// or at the bound (lineBound).
func nextLine(m []byte, pos int) (int, int) {
	ended := lineEnd
	if len(m) > SIPScanMax {
		ended = lineBound
	}
	limit := min(len(m), SIPScanMax) // a header line starts before this
	if pos >= limit-1 {
		return 0, ended
	}
	i := bytes.IndexByte(m[pos:limit-1], '\n')
	if i < 0 {
		return 0, ended
	}
	h := pos + i + 1
	if m[h] == '\r' || m[h] == '\n' {
		return 0, lineBlank
	}
	return h, lineHeader
}
func at(m []byte, i int) int {
	if i < len(m) {
		return int(m[i])
	}
	return -1
}

func isSP(c int) bool { return c == ' ' || c == '\t' }

func lower(c int) int {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// skipSP skips at most SIPWSMax spaces or tabs.
func skipSP(m []byte, i int) int {
	for n := 0; n < SIPWSMax && isSP(at(m, i)); n++ {
		i++
	}
	return i
}
