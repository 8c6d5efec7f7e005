package classify

// The users a SIP request names, read as bpf/sip_user.h reads them
// (docs/design.md, "Authentication rules"): the CLI, the user of the
// P-Asserted-Identity URI when that header is there, else of the From URI;
// the called number, the user of the Request-URI.

const (
	// UserMax is CAC_USER_MAX: the bytes of a user that are kept.
	UserMax = 32
	// URIScanMax is CAC_URI_SCAN_MAX: how far a user, a '<' in a header
	// value, or the space after the method is looked for.
	URIScanMax = 64
)

// Which header userHeaderAt found (USER_HDR_FROM, USER_HDR_PAI).
const (
	userFrom = iota + 1
	userPAI
)

// userHeaderAt is user_header_at: whether the line at h is From (or
// compact f) or P-Asserted-Identity, and its value's offset.
func userHeaderAt(m []byte, h int) (kind, v int, ok bool) {
	if h > SIPScanMax {
		return 0, 0, false
	}
	if v, ok := nameAt(m, h, "from"); ok {
		return userFrom, v, true
	}
	if v, ok := nameAt(m, h, "f"); ok {
		return userFrom, v, true
	}
	if v, ok := nameAt(m, h, "p-asserted-identity"); ok {
		return userPAI, v, true
	}
	return 0, 0, false
}

// findUsers is sip_find_users: the value offsets of the first From (or
// compact f) and the first P-Asserted-Identity among the header lines,
// 0 for one not found. The fast path walks the lines for them on its own,
// and only with CLI rules; the model takes them from its one walk, which
// visits the same lines.
func (r *Reader) findUsers(m []byte) (from, pai int) {
	ix := r.index(m)
	return ix.from, ix.pai
}

// valueURI is value_uri: the offset of the URI in a From or
// P-Asserted-Identity value at v, or 0. Spaces are skipped (SIPWSMax at
// most); a quoted display name is skipped to its closing quote, backslash
// escapes honoured; the URI follows a '<' found within URIScanMax bytes
// on the value's line; with none, the value is the URI (none after a
// quoted name).
func valueURI(m []byte, v int) int {
	if v > SIPScanMax+64 {
		return 0
	}
	v = skipSP(m, v)
	first, quoted, escaped := v, false, false
	if at(m, v) == '"' {
		first, quoted = 0, true
		v++
	}
	for i := 0; i < URIScanMax; i++ {
		off := v + i
		c := at(m, off)
		if c < 0 || c == '\r' || c == '\n' {
			break
		}
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case quoted && c == '"':
			quoted = false
		case !quoted && c == '<':
			return off + 1
		}
	}
	return first
}

// uriUser is uri_user: the user of the URI at u, its first UserMax bytes,
// or "" for none. A sip or sips user ends at '@' and there is none if '>',
// a space, a tab, CR, LF or the end of the message comes first, or
// URIScanMax bytes pass; a tel user ends at ';', '>', a space, a tab, CR,
// LF or the end of the message, and there is none past URIScanMax bytes.
func uriUser(m []byte, u int) string {
	if u > SIPScanMax+128 {
		return ""
	}
	a, b, c, d := at(m, u)|0x20, at(m, u+1)|0x20, at(m, u+2)|0x20, at(m, u+3)
	var start int
	tel := false
	switch {
	case a == 's' && b == 'i' && c == 'p' && d == ':':
		start = u + 4
	case a == 's' && b == 'i' && c == 'p' && d|0x20 == 's' && at(m, u+4) == ':':
		start = u + 5
	case a == 't' && b == 'e' && c == 'l' && d == ':':
		start, tel = u+4, true
	default:
		return ""
	}
	for i := 0; i < URIScanMax; i++ {
		c := at(m, start+i)
		if c < 0 || c == '>' || isSP(c) || c == '\r' || c == '\n' || (tel && c == ';') {
			if !tel {
				return ""
			}
			return string(m[start : start+min(i, UserMax)])
		}
		if !tel && c == '@' {
			return string(m[start : start+min(i, UserMax)])
		}
	}
	return ""
}

// requestURI is request_uri: the offset past the method and the one space
// after it, within URIScanMax bytes; 0 without.
func requestURI(m []byte) int {
	for i := 1; i < URIScanMax; i++ {
		c := at(m, i)
		if c < 0 || c == '\r' || c == '\n' {
			return 0
		}
		if c == ' ' {
			return i + 1
		}
	}
	return 0
}

// CLIOf is the CLI of a SIP request (the message as ClassifySIP returns
// it, from its method on): the user of the P-Asserted-Identity URI when
// the header is there, else of the From URI; "" for none.
func CLIOf(m []byte) string {
	var r Reader
	return r.CLIOf(m)
}

// CLIOf is the package's CLIOf, read by r.
func (r *Reader) CLIOf(m []byte) string {
	from, pai := r.findUsers(m)
	v := pai
	if v == 0 {
		v = from
	}
	if v == 0 {
		return ""
	}
	u := valueURI(m, v)
	if u == 0 {
		return ""
	}
	return uriUser(m, u)
}

// CalledOf is the called number of a SIP request: the user of its
// Request-URI, "" for none.
func CalledOf(m []byte) string {
	u := requestURI(m)
	if u == 0 {
		return ""
	}
	return uriUser(m, u)
}
