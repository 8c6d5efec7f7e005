package peers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// The mutations of the receiver differential's generator, each a change
// of one part of a request that a filter and a SIP stack may read
// differently. Each returns what it did, for the report.

// fzToForms are To values of every kind of tag Kamailio and sipgo read
// differently (the report in the brief's study): case, spaces, quotes,
// empty values, several tags, tags where they are no header parameter.
var fzToForms = []string{
	"Bob <sip:bob@example.com>;tag=abc", "Bob <sip:bob@example.com>;TAG = abc", "Bob <sip:bob@example.com>;Tag=abc",
	"Bob <sip:bob@example.com>; tag=abc", "Bob <sip:bob@example.com> ;tag=abc", "Bob <sip:bob@example.com>;tag =abc",
	"Bob <sip:bob@example.com>;tag= abc", `Bob <sip:bob@example.com>;tag=""`, `Bob <sip:bob@example.com>;tag=" "`,
	`Bob <sip:bob@example.com>;tag="abc"`, "Bob <sip:bob@example.com>;tag=", "Bob <sip:bob@example.com>;tag",
	"Bob <sip:bob@example.com>;tag=abc;tag=", "Bob <sip:bob@example.com>;tag=;tag=abc", "Bob <sip:bob@example.com>;tag=a=b",
	"Bob <sip:bob@example.com>;tagx=1", "Bob <sip:bob@example.com>;x=1;tag=abc", "Bob <sip:bob@example.com>;tag=abc;x=1",
	"Bob <sip:bob@example.com>;tag=abc x", "Bob <sip:bob@example.com>;tag=a,b", `Bob <sip:bob@example.com>;tag="a b"`,
	"Bob <sip:bob@example.com>;tag=\t\"q\"", "Bob <sip:bob@example.com>;tag=abc;TAG=", `Bob <sip:bob@example.com>;tag="";tag=""`,
	`Bob <sip:bob@example.com>;tag="abc`, "Bob <sip:bob@example.com;tag=abc>", `"tag=abc" <sip:bob@example.com>`,
	`"Bob;tag=abc" <sip:bob@example.com>`, "sip:bob@example.com;tag=abc", "sip:bob@example.com;tag=", "<sip:bob@example.com>;tag=abc",
	"Bob <sip:bob@example.com>;tag=abc;tag=def", "Bob <sip:bob@example.com>;tag=\"\";tag=abc", "Bob <sip:bob@example.com>;tag=;x=1",
	"Bob <sip:bob@example.com>;tag = ", `Bob <sip:bob@example.com>;tag="a\"b"`, "Bob <sip:bob@example.com>;\ttag=abc",
}

func mutToTag(r *rand.Rand, m *fzMsg) string {
	v := fzToForms[r.IntN(len(fzToForms))]
	if r.IntN(4) == 0 { // another tag value, of any length
		v = strings.Replace(v, "abc", fzToken(r, 1+r.IntN(40)), 1)
	}
	m.headers[m.index("to")].value = v
	return fmt.Sprintf("%q", v)
}

func mutTwoTo(r *rand.Rand, m *fzMsg) string {
	forms := []string{"Bob <sip:bob@example.com>", "Bob <sip:bob@example.com>;tag=second"}
	h := fzHdr{key: "to2", name: "To", value: forms[r.IntN(2)]}
	at := r.IntN(len(m.headers) + 1)
	m.headers = slices.Insert(m.headers, at, h)
	return fmt.Sprintf("%q at %d", h.value, at)
}

func mutLongTo(r *rand.Rand, m *fzMsg) string {
	i := m.index("to")
	v := m.headers[i].value
	switch r.IntN(3) {
	case 0: // a display name that pushes the tag past 256 bytes
		m.headers[i].value = `"` + fzToken(r, 250+r.IntN(150)) + `" ` + strings.TrimPrefix(v, "Bob ")
		return "display"
	case 1: // parameters before the tag
		var p strings.Builder
		for p.Len() < 260+r.IntN(100) {
			p.WriteString(";p" + fzToken(r, 3) + "=" + fzToken(r, 8))
		}
		if at := strings.Index(v, ";"); at >= 0 {
			m.headers[i].value = v[:at] + p.String() + v[at:]
		} else {
			m.headers[i].value = v + p.String()
		}
		return "params"
	default: // a long user part
		m.headers[i].value = strings.Replace(v, "bob@", fzToken(r, 260+r.IntN(100))+"@", 1)
		return "user"
	}
}

func mutManyHeaders(r *rand.Rand, m *fzMsg) string {
	n := 30 + r.IntN(41)
	fill := make([]fzHdr, n)
	for j := range fill {
		fill[j] = fzHdr{key: "x", name: fmt.Sprintf("X-Fill-%s", fzToken(r, 1+r.IntN(6))), value: fzToken(r, 1+r.IntN(20))}
	}
	// The To header after all of them, where a filter that looks at the
	// first headers only no longer sees it.
	i := m.index("to")
	to := m.headers[i]
	m.headers = slices.Delete(m.headers, i, i+1)
	m.headers = append(append(m.headers[:len(m.headers)-1:len(m.headers)-1], fill...), to, m.headers[len(m.headers)-1])
	return fmt.Sprint(n)
}

func mutCallID(r *rand.Rand, m *fzMsg) string {
	i := m.index("call-id")
	v := m.headers[i].value
	switch r.IntN(4) {
	case 0: // short: the marker alone
		v = strings.TrimSuffix(v, "@example.net")
	case 1: // up to 300 bytes, the marker first
		v = strings.Replace(v, "@", "."+fzToken(r, 1+r.IntN(290-len(v)))+"@", 1)
	case 2: // trailing blanks: Kamailio keeps them, sipgo trims them
		v += []string{" ", "\t", "  \t"}[r.IntN(3)]
	default: // leading blanks
		v = []string{" ", "\t", "   "}[r.IntN(3)] + v
	}
	m.headers[i].value = v
	return fmt.Sprint(len(v))
}

func mutVia(r *rand.Rand, m *fzMsg) string {
	i := m.index("via")
	switch r.IntN(3) {
	case 0: // up to 300 bytes
		m.headers[i].value += ";x-pad=" + fzToken(r, 1+r.IntN(240))
		return "long"
	case 1:
		m.headers[i].value += ";rport"
		return "rport"
	default: // a second Via, after the first
		h := fzHdr{key: "via2", name: "Via", value: "SIP/2.0/UDP 192.0.2.77:5060;branch=z9hG4bK-second"}
		m.headers = slices.Insert(m.headers, i+1, h)
		return "two"
	}
}

func mutContentLength(r *rand.Rand, m *fzMsg) string {
	i := m.index("content-length")
	if m.body == "" && r.IntN(2) == 0 {
		m.body = "hello, filter"
	}
	switch r.IntN(4) {
	case 0:
		m.headers[i].value = fmt.Sprint(len(m.body) + 1 + r.IntN(100))
		return "larger"
	case 1:
		m.headers[i].value = fmt.Sprint(r.IntN(len(m.body) + 1))
		return "smaller"
	case 2:
		m.headers = slices.Delete(m.headers, i, i+1)
		return "absent"
	default:
		m.headers[i].value = []string{"abc", "5x", "-1", "12 3", "0x10", ""}[r.IntN(6)]
		return fmt.Sprintf("%q", m.headers[i].value)
	}
}

func mutOddHeader(r *rand.Rand, m *fzMsg) string {
	h := []fzHdr{{key: "x", name: "X Y", value: "z"}, {key: "x", name: "X-Foo!", value: "1"},
		{key: "x", name: "X-Empty", value: ""}, {key: "x", name: "x_under.score+~", value: "1"}}[r.IntN(4)]
	at := r.IntN(len(m.headers) + 1)
	m.headers = slices.Insert(m.headers, at, h)
	return fmt.Sprintf("%q at %d", h.name, at)
}

func mutShuffle(r *rand.Rand, m *fzMsg) string {
	r.Shuffle(len(m.headers), func(i, j int) { m.headers[i], m.headers[j] = m.headers[j], m.headers[i] })
	return "all"
}

func mutURIVersion(r *rand.Rand, m *fzMsg) string {
	if r.IntN(2) == 0 {
		m.uri = []string{"sips:bob@example.com", "tel:+15551234", "sip:bob@example.com;transport=udp", "<sip:bob@example.com>",
			"*", "sip:bob@[2001:db8::1]", "SIP:bob@example.com", "bob"}[r.IntN(8)]
		return fmt.Sprintf("uri %q", m.uri)
	}
	m.version = []string{"sip/2.0", "SIP/2.0 ", "SIP/2.0\t", "SIP/3.0", "SIP/2.0x", "Sip/2.0", "SIP/2.00"}[r.IntN(7)]
	return fmt.Sprintf("version %q", m.version)
}

func mutMethod(r *rand.Rand, m *fzMsg) string {
	w := m.method
	switch r.IntN(9) {
	case 0:
		m.method = strings.ToLower(w)
	case 1: // mixed case
		b := []byte(w)
		for j := range b {
			if r.IntN(2) == 0 {
				b[j] ^= 0x20
			}
		}
		m.method = string(b)
	case 2:
		m.sep = "\t"
	case 3:
		m.sep = "  "
	case 4: // a NUL inside, or after
		at := 1 + r.IntN(len(w))
		m.method = w[:at] + "\x00" + w[at:]
	case 5:
		m.method = []string{"FOO", "XYZZY", "INV", "NOTIFYX", "REGISTE", "OPTION"}[r.IntN(6)]
	case 6:
		m.method = w + []string{"X", "-", "S", "_", "1"}[r.IntN(5)]
	case 7:
		m.method = []string{"X", "-", "~", "'"}[r.IntN(4)] + w
	default:
		// Letters that only Unicode upper-cases to ASCII: dotless i to
		// I, long s to S. Kamailio compares bytes; sipgo upper-cases
		// the method with strings.ToUpper.
		m.method = strings.NewReplacer("I", "ı", "S", "ſ").Replace(w)
	}
	return fmt.Sprintf("%q sep %q", m.method, m.sep)
}

func mutFoldTo(r *rand.Rand, m *fzMsg) string {
	i := m.index("to")
	v := m.headers[i].value
	var at []int // where a fold may go: the start, before '<' or ';'
	at = append(at, 0)
	for j := 1; j < len(v); j++ {
		if v[j] == '<' || v[j] == ';' || v[j] == ' ' {
			at = append(at, j)
		}
	}
	j := at[r.IntN(len(at))]
	ws := []string{" ", "\t", "  "}[r.IntN(3)]
	m.headers[i].value = v[:j] + "\r\n" + ws + strings.TrimLeft(v[j:], " ")
	return fmt.Sprint(j)
}

// fzCompact are the long and compact names the mutation trades.
var fzCompact = map[string][2]string{"to": {"To", "t"}, "call-id": {"Call-ID", "i"}, "via": {"Via", "v"},
	"from": {"From", "f"}, "content-length": {"Content-Length", "l"}, "contact": {"Contact", "m"}}

func mutHeaderName(r *rand.Rand, m *fzMsg) string {
	var done []string
	for k := 1 + r.IntN(3); k > 0; k-- {
		key := []string{"to", "to", "call-id", "via", "from", "content-length", "contact"}[r.IntN(7)]
		i := m.index(key)
		if i < 0 {
			continue
		}
		b := []byte(fzCompact[key][r.IntN(2)])
		for j := range b {
			if r.IntN(2) == 0 && b[j] >= 'A' {
				b[j] ^= 0x20
			}
		}
		m.headers[i].name = string(b)
		done = append(done, string(b))
	}
	return strings.Join(done, ",")
}

func mutColonPad(r *rand.Rand, m *fzMsg) string {
	i := m.index("to")
	if r.IntN(2) == 0 {
		i = r.IntN(len(m.headers))
	}
	b := make([]byte, r.IntN(9))
	for j := range b {
		b[j] = " \t"[r.IntN(2)]
	}
	m.headers[i].pad = string(b)
	return fmt.Sprintf("%s %q", m.headers[i].key, b)
}

func mutLF(r *rand.Rand, m *fzMsg) string {
	m.eol = "\n"
	return "all"
}

func mutLead(r *rand.Rand, m *fzMsg) string {
	switch r.IntN(8) {
	case 0:
		m.lead = "\xef\xbb\xbf" // a byte order mark
	case 1:
		m.lead = "#"
	case 2:
		m.lead = "\x0b"
	default:
		// A run of the bytes Kamailio skips, of one kind or mixed, now
		// and then far longer than a stray CRLF.
		set := []string{" ", "\t", "\x00", "\r", "\n", "\r\n", " \t\x00\r\n"}[r.IntN(7)]
		n := 1 + r.IntN(40)
		if r.IntN(10) == 0 {
			n = 41 + r.IntN(1460)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = set[r.IntN(len(set))]
		}
		if set == "\r\n" {
			b = []byte(strings.Repeat("\r\n", (n+1)/2))
		}
		m.lead = string(b)
	}
	return fmt.Sprintf("%d bytes %q", len(m.lead), m.lead[:min(len(m.lead), 12)])
}
