package classify

// The To header's value, as bpf/sip_to.h reads it: does it carry a tag
// every receiver reads as one?

// toName reports whether the header at h is To ("To" or compact "t", any
// case, spaces before the colon) and where its value starts; wide, for a
// To with more blanks before its colon than the filter skips, whose value
// is not read (a To to Kamailio, which takes any run of them).
func toName(m []byte, h int) (v int, ok, wide bool) {
	if lower(at(m, h)) != 't' {
		return 0, false, false
	}
	j := h + 1
	if lower(at(m, j)) == 'o' {
		j++
	}
	j = skipSP(m, j)
	if isSP(at(m, j)) {
		return j, true, true
	}
	if at(m, j) != ':' {
		return 0, false, false
	}
	return j + 1, true, false
}

// toTagged reports whether the To value at v has a tag as every receiver
// reads it: the last tag parameter outside the quoted display name and
// <URI>, spelt ";tag=", with a value that holds no '='. Folded lines
// continue the header. A value cut short at SIPToMax may go on with a tag
// parameter that takes the tag away: no tag. So has one that takes more
// than SIPToSteps steps: the fast path reads it a step at a time, a step
// each byte that can change the state (toStep), each escaped byte, and one
// to find the end when no newline ends it.
func toTagged(m []byte, v int) bool {
	quoted, escaped, angle, tagged, inTag := false, false, false, false, false
	end := min(v+SIPToMax, len(m))
	steps := 0
	for off := v; off < end; off++ {
		c := int(m[off])
		if escaped || toStep(c) {
			if steps++; steps > SIPToSteps {
				return false
			}
		}
		if c == '\n' {
			if !isSP(at(m, off+1)) {
				return tagged
			}
			continue
		}
		// sipgo splits a parameter at its last '=': one in the tag's
		// value leaves it no tag.
		if c == '=' && inTag {
			tagged, inTag = false, false
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
		case c == ';':
			kind, value := tagAt(m, off+1)
			inTag = false
			switch kind {
			case tagSet:
				tagged, inTag = true, true
				off = value - 1
			case tagEmpty:
				tagged = false
			}
		}
	}
	return tagged && end == len(m) && steps < SIPToSteps
}

// toStep reports whether c is a byte sip_next_special (bpf/sip_to.h)
// stops at: one that can change what a To value means.
func toStep(c int) bool {
	switch c {
	case '"', '<', '>', ';', '\\', '\n', '=':
		return true
	}
	return false
}

// What tagAt makes of a header parameter (TAG_NONE, TAG_SET, TAG_EMPTY of
// bpf/sip_to.h).
const (
	tagNone = iota
	tagSet
	tagEmpty
)

// tagAt reads the parameter at q as the receivers do, and where they
// disagree as the one that finds no tag: Kamailio takes the name in any
// case, blanks around it and the '=', a value quoted or not; sipgo only
// ";tag=" spelt so. It returns tagSet and the value's offset for ";tag="
// and a value, tagNone for another parameter, and tagEmpty for any other
// tag ("tag", "tag=", tag="", an unclosed quote, another spelling, more
// blanks than the filter skips).
func tagAt(m []byte, q int) (int, int) {
	start := q
	q = skipSP(m, q)
	if isSP(at(m, q)) {
		return tagEmpty, 0
	}
	exact := q == start && at(m, q) == 't' && at(m, q+1) == 'a' && at(m, q+2) == 'g' && at(m, q+3) == '='
	if lower(at(m, q)) != 't' || lower(at(m, q+1)) != 'a' || lower(at(m, q+2)) != 'g' {
		return tagNone, 0
	}
	q += 3
	c := at(m, q)
	switch {
	case c == '=' || isSP(c):
		q = skipSP(m, q)
		c = at(m, q)
	case c >= 0 && c != ';' && c != ',' && c != '\r' && c != '\n' && c != '>':
		return tagNone, 0 // another name: "tagx"
	}
	if c != '=' {
		return tagEmpty, 0
	}
	q = skipSP(m, q+1)
	c = at(m, q)
	var set bool
	if c == '"' {
		c = at(m, q+1)
		set = c >= 0 && c != '"' && c != '\r' && c != '\n'
	} else {
		set = c >= 0 && !isSP(c) && c != '\r' && c != '\n' && c != ';' && c != ','
	}
	if !set || !exact || q > sipReadLimit {
		return tagEmpty, 0
	}
	return tagSet, q
}
