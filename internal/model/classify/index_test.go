package classify

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
)

// The walks the readers made each on their own before the one walk
// indexed what they need: what the index says must be what they found.

func walkedToHeaders(m []byte, fragmented bool) (dialog, many bool) {
	seen := false
	pos := 0
	for line := 0; line < SIPMaxLines; line++ {
		h, end := nextLine(m, pos)
		switch end {
		case lineBlank:
			return seen, many
		case lineEnd:
			return seen && !fragmented, many
		case lineBound:
			return false, many
		}
		v, ok, wide := toName(m, h)
		if !ok {
			pos = h
			continue
		}
		many = many || seen
		if wide || !toTagged(m, v) {
			return false, many
		}
		seen, pos = true, v
	}
	return false, many
}

// walkedLines walks the header lines as each reader did, To header lines
// skipped from their value on, and hands the others to visit until it
// says it has found all it looks for.
func walkedLines(m []byte, visit func(h int) (done bool)) {
	pos := 0
	for line := 0; line < SIPMaxLines; line++ {
		h, end := nextLine(m, pos)
		if end != lineHeader {
			return
		}
		if v, ok, _ := toName(m, h); ok {
			pos = v
			continue
		}
		pos = h
		if visit(h) {
			return
		}
	}
}

func walkedTxn(m []byte) (at [3]int) {
	walkedLines(m, func(h int) bool {
		if kind, v, ok := txnHeaderAt(m, h); ok && at[kind] == 0 {
			at[kind] = v
		}
		return at[txnCallID] != 0 && at[txnCSeq] != 0 && at[txnVia] != 0
	})
	return at
}

func walkedCallID(m []byte) (at int) {
	walkedLines(m, func(h int) bool {
		if v, ok := nameAt(m, h, "call-id"); ok {
			at = v
		} else if v, ok := nameAt(m, h, "i"); ok {
			at = v
		}
		return at != 0
	})
	return at
}

func walkedUsers(m []byte) (from, pai int) {
	walkedLines(m, func(h int) bool {
		if v, ok := nameAt(m, h, "from"); ok {
			from = cmp.Or(from, v)
		} else if v, ok := nameAt(m, h, "f"); ok {
			from = cmp.Or(from, v)
		} else if v, ok := nameAt(m, h, "p-asserted-identity"); ok {
			pai = cmp.Or(pai, v)
		}
		return false
	})
	return from, pai
}

// randomRequest builds a request of header lines drawn from a pool of the
// ones the walk notes, and others, some long enough to reach the bounds.
func randomRequest(r *rand.Rand) []byte {
	pool := []string{
		"Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-1", "v: SIP/2.0/UDP 192.0.2.2", "VIA:x",
		"Call-ID: a@192.0.2.1", "i: b@192.0.2.1", "call-id  :c", "Call-ID     : wide",
		"CSeq: 1 INVITE", "cseq:2 INVITE", "CSeq : 3 CANCEL",
		"To: <sip:b@example.com>", "To: <sip:b@example.com>;tag=1", "t : \"B\" <sip:b@x> ;tag=2",
		"To     : <sip:b@x>;tag=3", "TO: x;tag", "to:<sip:b@x;tag=4>",
		"From: <sip:alice@example.com>;tag=9", "f: sip:bob@example.com", "fRoM:\"A\" <tel:+4420>",
		"P-Asserted-Identity: <tel:+442071234567>", "p-asserted-identity :sip:pai@x",
		"Timestamp: 1", "Contact: <sip:a@192.0.2.1>", " folded", "\tfolded too", "",
		"X-Pad: " + strings.Repeat("p", 100), "X-Long: " + strings.Repeat("l", 700),
	}
	var b strings.Builder
	b.WriteString([]string{"INVITE sip:b@example.com SIP/2.0", "CANCEL sip:b@x SIP/2.0", "OPTIONS sip:x SIP/2.0"}[r.IntN(3)])
	eol := []string{"\r\n", "\n"}[r.IntN(2)]
	// A third of them with no To the search stops at, no blank line and
	// no long one, so that it may walk all SIPMaxLines lines.
	short := r.IntN(3) == 0
	for n := r.IntN(SIPMaxLines + 16); n > 0; n-- {
		h := pool[r.IntN(len(pool))]
		if short && (h == "To: <sip:b@example.com>" || h == "To     : <sip:b@x>;tag=3" || h == "TO: x;tag" || h == "" || len(h) > 100) {
			h = "Max-Forwards: 70"
		}
		b.WriteString(eol)
		b.WriteString(h)
	}
	if r.IntN(4) != 0 {
		b.WriteString(eol + eol + "v=0" + eol)
	}
	m := []byte(b.String())
	if r.IntN(4) == 0 {
		m = m[:r.IntN(len(m)+1)] // a first fragment, or a datagram cut short
	}
	return m
}

// TestIndexAsWalked: for any request, what the one walk indexes is what
// each reader's own walk found, bounds and all.
func TestIndexAsWalked(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		m := randomRequest(r)
		ix := walkHeaders(m)
		for _, fragmented := range []bool{false, true} {
			d, many := walkedToHeaders(m, fragmented)
			if ix.dialog(fragmented) != d || ix.many != many {
				t.Fatalf("%q fragmented %v: dialog %v, many %v; walked %v, %v", m, fragmented, ix.dialog(fragmented), ix.many, d, many)
			}
		}
		if want := walkedTxn(m); ix.txn != want {
			t.Fatalf("%q: transaction's headers at %v, walked %v", m, ix.txn, want)
		}
		if v := walkedCallID(m); ix.txn[txnCallID] != v {
			t.Fatalf("%q: Call-ID at %d, walked %d", m, ix.txn[txnCallID], v)
		}
		if from, pai := walkedUsers(m); ix.from != from || ix.pai != pai {
			t.Fatalf("%q: From at %d, P-Asserted-Identity at %d; walked %d, %d", m, ix.from, ix.pai, from, pai)
		}
	}
}

// TestOneWalk: the classifier's walk is the only one a Reader makes over
// an INVITE's header lines, whatever the readers after it ask of the
// message; a response, which the classifier does not walk, is walked by
// its first reader alone.
func TestOneWalk(t *testing.T) {
	ports := NewPorts(nil, []uint16{5060})
	for _, tc := range []struct {
		msg  string
		want Result
	}{
		{"INVITE sip:+4420@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-1\r\nTo: <sip:b@example.com>\r\n" +
			"From: <sip:alice@example.com>;tag=1\r\nCall-ID: a@192.0.2.1\r\nCSeq: 1 INVITE\r\n\r\n", session(cac.SIPInvite)},
		{"SIP/2.0 486 Busy Here\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK-1\r\nCall-ID: a@192.0.2.1\r\nCSeq: 1 INVITE\r\n\r\n", kind(cac.Other)},
	} {
		var rd Reader
		r, msg := rd.ClassifySIP(udp4Frame(5060, []byte(tc.msg)), ports)
		if r != tc.want {
			t.Fatalf("%q: %v, want %v", tc.msg, r, tc.want)
		}
		callid, txn := rd.Txn(msg)
		if rd.CallID(msg) != callid || callid == 0 || txn == 0 {
			t.Errorf("%q: Call-ID %x, transaction %x", tc.msg, callid, txn)
		}
		if _, _, ok := rd.Answer(msg); !ok {
			t.Errorf("%q: no answer's headers", tc.msg)
		}
		if cli, want := rd.CLIOf(msg), CLIOf(msg); cli != want {
			t.Errorf("%q: CLI %q, the package's %q", tc.msg, cli, want)
		}
		if n := rd.Walks(); n != 1 {
			t.Errorf("%q: %d walks over the header lines, want 1", tc.msg, n)
		}
	}
}

// TestReaderKeyed: a Reader's index is of the bytes it walked; a reader
// asked about other bytes, even the same message read in the same buffer
// after it changed, walks them, and reads them as a fresh Reader does.
func TestReaderKeyed(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var rd Reader
	var prev []byte
	for i := 0; i < 5000; i++ {
		m := randomRequest(r)
		if i%3 == 0 && prev != nil {
			m = prev // the same message again: no walk
		}
		walks := rd.Walks()
		switch i % 4 {
		case 0:
			c, x := rd.Txn(m)
			if wc, wx := Txn(m); c != wc || x != wx {
				t.Fatalf("%q: Txn %x, %x; fresh %x, %x", m, c, x, wc, wx)
			}
		case 1:
			if got, want := rd.CallID(m), CallID(m); got != want {
				t.Fatalf("%q: CallID %x, fresh %x", m, got, want)
			}
		case 2:
			if got, want := rd.CLIOf(m), CLIOf(m); got != want {
				t.Fatalf("%q: CLIOf %q, fresh %q", m, got, want)
			}
		case 3:
			c, inv, ok := rd.Answer(m)
			if wc, winv, wok := Answer(m); c != wc || inv != winv || ok != wok {
				t.Fatalf("%q: Answer %x %v %v, fresh %x %v %v", m, c, inv, ok, wc, winv, wok)
			}
		}
		want := walks + 1
		if prev != nil && string(m) == string(prev) {
			want = walks
		}
		if rd.Walks() != want {
			t.Fatalf("%q: %d walks, want %d", m, rd.Walks()-walks, want-walks)
		}
		prev = m
	}
	// The same buffer, written over: the index kept is not of it.
	buf := request("Via: SIP/2.0/UDP 192.0.2.1", "CSeq: 1 INVITE", "Call-ID: a@192.0.2.1")
	first := rd.CallID(buf)
	copy(buf[len("INVITE sip:bob@example.com SIP/2.0\r\n"):], "X-Via")
	if _, txn := rd.Txn(buf); txn != 0 || rd.CallID(buf) != first {
		t.Errorf("a message written over: transaction %x, Call-ID %x (was %x)", txn, rd.CallID(buf), first)
	}
}

// TestLineBudget: a header on the last line the walk visits is seen by
// every reader; one line further it is unseen by every reader, as the
// fast path's walk does not reach it either.
func TestLineBudget(t *testing.T) {
	headers := func(pad int) []byte {
		var lines []string
		for i := 0; i < pad; i++ {
			lines = append(lines, fmt.Sprintf("X-%d: p", i))
		}
		lines = append(lines, "Via: SIP/2.0/UDP 192.0.2.1", "CSeq: 1 INVITE", "From: <sip:alice@example.com>", "Call-ID: a@192.0.2.1")
		return request(lines...)
	}
	seen, unseen := headers(SIPMaxLines-4), headers(SIPMaxLines-3)
	if _, txn := Txn(seen); txn == 0 || CallID(seen) == 0 || CLIOf(seen) != "alice" {
		t.Errorf("headers on the last line walked: transaction %x, Call-ID %x, CLI %q", txn, CallID(seen), CLIOf(seen))
	}
	if _, txn := Txn(unseen); txn != 0 || CallID(unseen) != 0 || CLIOf(unseen) != "alice" {
		t.Errorf("Call-ID a line past the walk: transaction %x, Call-ID %x, CLI %q", txn, CallID(unseen), CLIOf(unseen))
	}
}

// udp4Frame is an Ethernet frame of an IPv4 UDP datagram to and from port.
func udp4Frame(port uint16, payload []byte) []byte {
	n := 28 + len(payload)
	eth := []byte{2, 0, 0x5e, 0, 0x53, 2, 2, 0, 0x5e, 0, 0x53, 1, 0x08, 0}
	ip := []byte{0x45, 0, byte(n >> 8), byte(n), 0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2}
	u := []byte{byte(port >> 8), byte(port), byte(port >> 8), byte(port), byte((n - 20) >> 8), byte(n - 20), 0, 0}
	return append(append(append(eth, ip...), u...), payload...)
}
