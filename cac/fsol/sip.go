package fsol

import (
	"bytes"

	"github.com/xdpcac/xdpcac/cac"
)

// The bounds of the SIP search, as in bpf/sip.h. A message that runs out of
// them is taken for a new dialog: charged, never waved through.
const (
	SIPScanMax  = 2048 // the To header must start before this offset
	SIPMaxLines = 64   // ... and be among this many header lines
	SIPToMax    = 256  // its tag must start within this many bytes of the colon
	SIPWSMax    = 4    // spaces or tabs allowed around ':', ';' and '='
)

func classifySIP(m []byte, fragmented bool) Result {
	// A first fragment too short to show the method hides the request in
	// fragments that cannot be classified: that is no SIP peer's doing.
	if fragmented && len(m) < len("OPTIONS ") {
		return kind(cac.Malformed)
	}
	var c cac.Class
	switch {
	case bytes.HasPrefix(m, []byte("INVITE ")): // methods are case-sensitive
		c = cac.SIPInvite
	case bytes.HasPrefix(m, []byte("OPTIONS ")):
		c = cac.SIPOptions
	default:
		return kind(cac.Other) // responses, other methods, keep-alives
	}
	// Without a To header in sight (missing, odd, past the bounds, or in a
	// later fragment) the request is taken for a new dialog: it is charged.
	if v, ok := findTo(m); ok && toTagged(m, v) {
		return kind(cac.InDialog)
	}
	return session(c)
}

// findTo returns the offset of the To header's value, if it starts before
// SIPScanMax among the first SIPMaxLines header lines. Header lines start
// after a newline, so the request line is never one; the blank line ends
// the search.
func findTo(m []byte) (int, bool) {
	pos := 0
	for line := 0; ; line++ {
		limit := min(len(m), SIPScanMax)
		if pos >= limit {
			return 0, false
		}
		i := bytes.IndexByte(m[pos:limit], '\n')
		if i < 0 {
			return 0, false
		}
		h := pos + i + 1
		if h >= len(m) || h >= SIPScanMax || line >= SIPMaxLines || m[h] == '\r' || m[h] == '\n' {
			return 0, false
		}
		if v, ok := toName(m, h); ok {
			return v, true
		}
		pos = h
	}
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

// toName reports whether the header at h is To ("To" or compact "t", any
// case, spaces before the colon) and where its value starts.
func toName(m []byte, h int) (int, bool) {
	if lower(at(m, h)) != 't' {
		return 0, false
	}
	j := h + 1
	if lower(at(m, j)) == 'o' {
		j++
	}
	j = skipSP(m, j)
	if at(m, j) != ':' {
		return 0, false
	}
	return j + 1, true
}

// toTagged reports whether the To value at v has a tag parameter outside
// its quoted display name and <URI>; folded lines continue the header.
func toTagged(m []byte, v int) bool {
	quoted, escaped, angle := false, false, false
	for off := v; off < v+SIPToMax && off < len(m); off++ {
		c := int(m[off])
		if c == '\n' {
			if !isSP(at(m, off+1)) {
				return false
			}
			continue
		}
		switch {
		case escaped:
			escaped = false
		case quoted:
			escaped = c == '\\'
			quoted = c != '"'
		case angle:
			angle = c != '>'
		case c == '"':
			quoted = true
		case c == '<':
			angle = true
		case c == ';' && tagAt(m, off+1):
			return true
		}
	}
	return false
}

// tagAt reports whether the parameter at q is a non-empty tag.
func tagAt(m []byte, q int) bool {
	q = skipSP(m, q)
	if lower(at(m, q)) != 't' || lower(at(m, q+1)) != 'a' || lower(at(m, q+2)) != 'g' {
		return false
	}
	q = skipSP(m, q+3)
	if at(m, q) != '=' {
		return false
	}
	c := at(m, skipSP(m, q+1))
	return c >= 0 && !isSP(c) && c != '\r' && c != '\n' && c != ';' && c != ','
}
