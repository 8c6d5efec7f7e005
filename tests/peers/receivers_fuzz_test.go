package peers

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/cac"
	. "github.com/xdpcac/xdpcac/internal/pkt"
)

// The generative receiver differential. The protected daemon is the
// oracle: rather than a list of forms someone thought of, a generator
// makes requests and asks the receivers what each is. Two receivers:
// Kamailio behind the filter (what it logged for the message's marker)
// and sipgo's parser in the test (on the exact UDP payload). For every
// receiver that takes a message for a request, the filter must have
// charged the class that receiver acts on:
//
//   - INVITE, OPTIONS or REGISTER (in any letter case) with no To tag:
//     sip-invite, sip-options, sip-register; REGISTER with a tag too;
//   - any other method with no To tag: sip-other;
//   - a To tag: sip-indialog, or any class of a new request (a charge
//     as a new request is the stricter one).
//
// Uncharged, malformed, in a dialog where the receiver reads no To tag,
// or another new-request class is a finding. One exception: where the
// receivers read the method differently (Kamailio skips a leading NUL,
// sipgo keeps it in the method; sipgo upper-cases a dotless i to I), no
// charge can suit both, and a charge that follows the other receiver's
// method is a conflict, reported and not failed. Kamailio's method
// counts there even when it refused the message for something later in
// it (its first line is simple to read as it does): the filter cannot
// know that. A tag is no such exception: the filter can always charge
// as a new request when one receiver sees no tag. Findings are kept, the
// run goes on, and the test fails at the end with each kind of finding,
// the mutations that made it and its messages.
//
// The frame around the message varies too (receivers_encap_test.go):
// priority tags, IPv4 options, IPv6 extension headers, fragments. The
// rules above hold whatever the frame. A fragmented message is charged
// by its first fragment alone (the others pass as fragments), and a first
// fragment can hold less than the method: one that does not show the
// method a receiver acts on (fzShows: the method and the byte that ends
// it, as that receiver reads them) may be charged malformed for that
// receiver, as the design charges what cannot be read. That is the only
// leave a fragment gets: one that shows the method is held to the rules
// above, and no other charge (say, sip-other for a REGISTER whose end
// is cut off) is excused for a hidden method; malformed is the only
// charge that claims no reading of it.
//
// XDPCAC_FUZZ_SEED and XDPCAC_FUZZ_N set the seed and the number of
// messages; XDPCAC_FUZZ_RECORD=1 writes the findings shown to
// receivers/corpus, which every run replays first; make fuzz-receivers
// runs 200000.

// fzShortN is the default count: about five seconds here, on top of the
// bed's own few (200000 take fifteen to twenty).
const fzShortN = 50000

// fzBatch is how many messages go out between two syncs with Kamailio's
// log: the counters are read for each, the log once a batch.
const fzBatch = 50

// fzExamples is how many messages of each kind of finding the report
// shows (XDPCAC_FUZZ_EXAMPLES), each made by other kinds of mutation; a
// recorded run writes these to the corpus.
const fzExamples = 8

// fzReading is what one receiver made of a message.
type fzReading struct {
	request     bool
	method, tag string
	tagged      bool
	why         string // why it is no request
}

func (r fzReading) String() string {
	switch {
	case !r.request:
		return r.why
	case r.tagged:
		return fmt.Sprintf("%q with To tag %q", r.method, r.tag)
	}
	return fmt.Sprintf("%q without a To tag", r.method)
}

// fzCase is one message sent.
type fzCase struct {
	origin, marker string
	msg            []byte
	v6             bool
	ext            []Ext
	encap          fzEncap
	muts           []string
	filter         string // what the filter charged
	sipgo, kam     fzReading
	replayed       bool // from the corpus: not recorded again
}

// fzSipgo reads msg as sipgo's UDP transport hands it to its parser. A
// tag is there when the To header has a "tag" parameter at all, as
// sipgo's dialog code asks (Params.Get ok), empty or quoted.
func fzSipgo(msg []byte) (r fzReading) {
	defer func() {
		if p := recover(); p != nil {
			r = fzReading{why: fmt.Sprintf("panicked: %v", p)}
		}
	}()
	m, err := sip.ParseMessage(msg)
	if err != nil {
		return fzReading{why: fmt.Sprintf("error: %q", err.Error())}
	}
	req, ok := m.(*sip.Request)
	if !ok {
		return fzReading{why: "a response"}
	}
	r = fzReading{request: true, method: string(req.Method)}
	if to := req.To(); to != nil {
		r.tag, r.tagged = to.Params.Get("tag")
	}
	return r
}

// fzFold reports whether s is the upper-case ASCII word w in any letter
// case, bytes compared as Kamailio's strncasecmp does (no Unicode).
func fzFold(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// fzNewClasses are the classes of a request that opens a dialog or none.
var fzNewClasses = []string{"sip-invite", "sip-options", "sip-register", "sip-other"}

// fzCheck holds the filter's charge to one receiver's reading r and says
// what is wrong, if anything. A charge of a new request of another method
// class is a conflict if it is the class of alt, the other receiver's
// reading of the method (altName names it).
func fzCheck(name string, r fzReading, filter, alt, altName string) (problem string, conflict bool) {
	want := fzClassOf(r.method).String()
	tagged := r.tagged && want != "sip-register"
	reads := name + " reads a new " + want
	if tagged {
		reads = name + " reads " + want + " in a dialog"
	}
	switch {
	case filter == want, filter == "sip-indialog" && tagged:
		return "", false
	case filter == "sip-indialog" && want == "sip-register" && altName != "" && fzClassOf(alt) != cac.SIPRegister:
		// A REGISTER to this one, never in a dialog; the other reads
		// another method, which its tag may put in one.
		return reads + "; the filter charged sip-indialog, the method as " + altName + " reads it", true
	case filter == "sip-indialog" && want == "sip-register":
		return reads + "; the filter charged sip-indialog", false
	case filter == "sip-indialog":
		return reads + " (no To tag); the filter charged sip-indialog", false
	case !slices.Contains(fzNewClasses, filter):
		return reads + "; the filter charged " + filter, false
	case tagged:
		return "", false // a charge as a new request: the stricter one
	case altName != "" && filter == fzClassOf(alt).String():
		return reads + "; the filter charged " + filter + ", the method as " + altName + " reads it", true
	}
	return reads + "; the filter charged " + filter, false
}

// fzShows reports whether the first fragment of c shows the method the
// receiver (Kamailio, or else sipgo) acts on: holds the method and the
// byte that ends it, as that receiver reads them. Kamailio skips SP, HT,
// CR, LF and NUL first and ends the method at SP, HT, CR or LF; sipgo's
// method runs from the first byte to the first SP.
func fzShows(c *fzCase, kamailio bool) bool {
	first := c.msg[:c.encap.firstPayload()]
	if !kamailio {
		return bytes.IndexByte(first, ' ') >= 0
	}
	return bytes.IndexAny(bytes.TrimLeft(first, " \t\r\n\x00"), " \t\r\n") > 0
}

// fzHidden reports whether the filter may charge c malformed for the
// receiver (Kamailio, or else sipgo): c went in fragments, and the first,
// the only one the filter classifies, cannot show the method that
// receiver acts on. The design charges a first fragment too short to show
// the method as malformed, and only what cannot be read is malformed: a
// first fragment that shows the method is held to the rules of a whole
// message (its To headers going on in a later fragment make it a new
// request, which those rules allow anyway).
func fzHidden(c *fzCase, kamailio bool) bool {
	return len(c.encap.frags) > 0 && c.filter == "malformed" && !fzShows(c, kamailio)
}

// fzClassOf is the class of a new request of method.
func fzClassOf(method string) cac.Class {
	for _, k := range []cac.Class{cac.SIPInvite, cac.SIPOptions, cac.SIPRegister} {
		if fzFold(method, strings.ToUpper(strings.TrimPrefix(k.String(), "sip-"))) {
			return k
		}
	}
	return cac.SIPOther
}

// fzKamMethod is the method Kamailio's first line parser reads in msg:
// parse_msg skips SP, HT, CR, LF and NUL, and the method runs to the
// first SP, HT, CR or LF.
func fzKamMethod(msg []byte) string {
	m := bytes.TrimLeft(msg, " \t\r\n\x00")
	if i := bytes.IndexAny(m, " \t\r\n"); i >= 0 {
		m = m[:i]
	}
	return string(m)
}

// fzEnvInt is the environment variable name as a number, or def.
func fzEnvInt(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// TestReceiversFuzzShort replays the corpus and then sends XDPCAC_FUZZ_N
// (fzShortN) generated messages of seed XDPCAC_FUZZ_SEED (1).
func TestReceiversFuzzShort(t *testing.T) {
	seed := fzEnvInt(t, "XDPCAC_FUZZ_SEED", 1)
	n := int(fzEnvInt(t, "XDPCAC_FUZZ_N", fzShortN))
	corpus := fzReadCorpus(t)
	t.Logf("seed %d (XDPCAC_FUZZ_SEED), %d messages (XDPCAC_FUZZ_N), after %d of the corpus", seed, n, len(corpus))
	b := newFzBed(t)
	r := newFzRun(b, os.Getenv("XDPCAC_FUZZ_RECORD") == "1")
	r.examples = int(fzEnvInt(t, "XDPCAC_FUZZ_EXAMPLES", fzExamples))
	start := time.Now()
	for i, e := range corpus {
		r.add(t, e.replay(i))
	}
	for i := range n {
		marker := fmt.Sprintf("fz%d-%d", seed, i)
		m := fzGenerate(seed, i, marker, b.v4, b.v6)
		r.add(t, &fzCase{origin: fmt.Sprintf("seed %d message %d", seed, i), marker: marker, msg: m.bytes(),
			v6: m.v6, ext: m.ext, encap: m.encap, muts: m.muts})
		if (i+1)%20000 == 0 {
			t.Logf("%d of %d sent, %v", i+1, n, time.Since(start).Round(time.Second))
		}
	}
	r.finish(t)
	r.report(t, time.Since(start))
}
