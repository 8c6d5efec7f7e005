package peers

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	. "github.com/xdpcac/xdpcac/internal/pkt"
)

// The generator of the receiver differential: a valid request, in or out
// of a dialog, with one to four mutations of the kinds a filter and a SIP
// stack may read differently. Each message is built from its own
// generator, seeded with the run's seed and its number, so that message n
// of seed s is the same on every run and on its own.

// fzMaxPayload bounds a message: the bed raises the veth's MTU to 3000,
// and an IPv6 header with extension headers and UDP takes the rest.
const fzMaxPayload = 2800

// fzMsg is a request kept in parts, so that a mutation changes one part
// and the marker in the Call-ID, the Via branch and the From tag stays.
type fzMsg struct {
	lead, method, sep, uri, version string
	eol                             string // every line's end
	headers                         []fzHdr
	body                            string
	v6                              bool
	ext                             []Ext
	encap                           fzEncap  // the rest of the frame around it
	muts                            []string // what was done, for the report
}

// fzHdr is one header line: name, then pad, then the colon, a space and
// value. A "\r\n" in value folds the line (it becomes eol).
type fzHdr struct {
	key, name, pad, value string // key: which header, "to", "call-id", ...
}

// bytes is the message as sent; a Content-Length of "{len}" becomes the
// body's length.
func (m *fzMsg) bytes() []byte {
	var b strings.Builder
	b.WriteString(m.lead + m.method + m.sep + m.uri + " " + m.version + m.eol)
	for _, h := range m.headers {
		v := strings.ReplaceAll(h.value, "{len}", fmt.Sprint(len(m.body)))
		b.WriteString(h.name + h.pad + ": " + strings.ReplaceAll(v, "\r\n", m.eol) + m.eol)
	}
	b.WriteString(m.eol + m.body)
	return []byte(b.String())
}

// index is where the first header of key is, -1 if none.
func (m *fzMsg) index(key string) int {
	return slices.IndexFunc(m.headers, func(h fzHdr) bool { return h.key == key })
}

// fzMethods are the methods of the base requests, INVITE the most often:
// it is what a flood sends.
var fzMethods = []string{"INVITE", "INVITE", "INVITE", "OPTIONS", "REGISTER", "BYE", "CANCEL",
	"MESSAGE", "ACK", "SUBSCRIBE", "NOTIFY", "INFO", "PRACK", "UPDATE", "REFER", "PUBLISH", "FOO", "XYZZY"}

// fzToken is n characters of a SIP token, letters and '-' only: no digit,
// so a marker's number ends where it ends, and no '|', which would shift
// the fields of Kamailio's log line.
func fzToken(r *rand.Rand, n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[r.IntN(len(chars))]
	}
	return string(b)
}

// fzBase is a valid request carrying marker, from src.
func fzBase(r *rand.Rand, marker string, src netip.Addr) *fzMsg {
	method := fzMethods[r.IntN(len(fzMethods))]
	hp := netip.AddrPortFrom(src, 5062).String()
	to := "Bob <sip:bob@example.com>"
	if r.IntN(5) < 2 {
		to += ";tag=" + fzToken(r, 4+r.IntN(12))
	}
	m := &fzMsg{method: method, sep: " ", uri: "sip:bob@example.com", version: "SIP/2.0", eol: "\r\n",
		v6: src.Is6(), muts: []string{}}
	m.headers = []fzHdr{
		{key: "via", name: "Via", value: "SIP/2.0/UDP " + hp + ";branch=z9hG4bK-" + marker},
		{key: "max-forwards", name: "Max-Forwards", value: "70"},
		{key: "to", name: "To", value: to},
		{key: "from", name: "From", value: "Alice <sip:alice@example.net>;tag=f" + marker},
		{key: "call-id", name: "Call-ID", value: marker + "@example.net"},
		{key: "cseq", name: "CSeq", value: "1 " + method},
		{key: "contact", name: "Contact", value: "<sip:alice@" + hp + ">"},
	}
	switch {
	case method == "INVITE" && r.IntN(2) == 0:
		m.headers = append(m.headers, fzHdr{key: "content-type", name: "Content-Type", value: "application/sdp"})
		m.body = "v=0\r\no=- 1 1 IN IP4 192.0.2.9\r\ns=-\r\nc=IN IP4 192.0.2.9\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n"
	case method == "MESSAGE":
		m.headers = append(m.headers, fzHdr{key: "content-type", name: "Content-Type", value: "text/plain"})
		m.body = "Is the filter in front of you?"
	}
	m.headers = append(m.headers, fzHdr{key: "content-length", name: "Content-Length", value: "{len}"})
	if m.v6 && r.IntN(5) == 0 {
		// Hop-by-hop first, where IPv6 wants it: up to three headers,
		// well inside the eight the filter walks.
		m.ext = []Ext{{Proto: 0}}
		for n := r.IntN(3); n > 0; n-- {
			m.ext = append(m.ext, Ext{Proto: []uint8{60, 43}[r.IntN(2)]})
		}
		m.muts = append(m.muts, fmt.Sprintf("v6-ext%d", len(m.ext)))
	}
	return m
}

// fzMutation changes m and says how.
type fzMutation struct {
	name  string
	apply func(r *rand.Rand, m *fzMsg) string
}

// fzMutations are applied in this order, whichever are drawn: the To
// header's form first, its folding and the header names last, so that
// each sees what the earlier ones built.
var fzMutations = []fzMutation{
	{"to-tag", mutToTag},
	{"two-to", mutTwoTo},
	{"long-to", mutLongTo},
	{"many-headers", mutManyHeaders},
	{"call-id", mutCallID},
	{"via", mutVia},
	{"content-length", mutContentLength},
	{"odd-header", mutOddHeader},
	{"shuffle", mutShuffle},
	{"uri-version", mutURIVersion},
	{"method", mutMethod},
	{"fold-to", mutFoldTo},
	{"header-name", mutHeaderName},
	{"colon-pad", mutColonPad},
	{"lf", mutLF},
	{"lead", mutLead},
}

// fzGenerate is message n of seed: a base request and one to four
// mutations, no longer than fzMaxPayload, in a frame fzEncapsulate drew.
func fzGenerate(seed uint64, n int, marker string, v4, v6 netip.Addr) *fzMsg {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	for {
		src := v4
		if r.IntN(2) == 1 {
			src = v6
		}
		m := fzBase(r, marker, src)
		picked := map[int]bool{}
		for k := 1 + r.IntN(4); len(picked) < k; {
			picked[r.IntN(len(fzMutations))] = true
		}
		for i, mu := range fzMutations {
			if picked[i] {
				m.muts = append(m.muts, mu.name+":"+mu.apply(r, m))
			}
		}
		if len(m.bytes()) <= fzMaxPayload {
			fzEncapsulate(seed, n, m)
			return m
		}
	}
}
