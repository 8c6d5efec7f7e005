package classify

import (
	"bytes"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
)

// FuzzClassify checks what must hold for any frame: no panic, and a session
// or in-dialog result only for frames that carry what the class says. A
// method matches in any letter case, and a request of any method but
// REGISTER claims a dialog with a tagged To (docs/design.md, "Read as the
// receiver reads", "In-dialog requests"), so an in-dialog result
// needs a To tag, not an INVITE.
func FuzzClassify(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	ports := NewPorts([]uint16{1701}, []uint16{5060})
	f.Fuzz(func(t *testing.T, frame []byte) {
		r := Classify(frame, ports)
		if r != Classify(frame, ports) {
			t.Fatal("not deterministic")
		}
		upper := asciiUpper(frame)
		switch {
		case r.Kind == cac.Session && (r.Class == cac.SIPInvite || r.Class == cac.SIPOptions):
			if !bytes.Contains(upper, []byte("INVITE ")) && !bytes.Contains(upper, []byte("OPTIONS ")) {
				t.Fatalf("%v without a method in %x", r, frame)
			}
		case r.Kind == cac.InDialog:
			if !hasToTag(upper) {
				t.Fatalf("%v without a tagged To header in %x", r, frame)
			}
		case r.Kind == cac.Session && (r.Class == cac.PPPoEPADI || r.Class == cac.PPPoEPADR):
			if !bytes.Contains(frame, []byte{0x88, 0x63, 0x11}) {
				t.Fatalf("%v without a PPPoE discovery header in %x", r, frame)
			}
		}
		if len(frame) < 14 && r.Kind != cac.Unwatched {
			t.Fatalf("%v for a %d-byte frame", r, len(frame))
		}
	})
}

// asciiUpper folds ASCII letters only, as the classifier does, and leaves
// every other byte where it was.
func asciiUpper(b []byte) []byte {
	u := make([]byte, len(b))
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		u[i] = c
	}
	return u
}

// hasToTag reports whether the folded frame has a line starting with T
// (To, or compact t) followed somewhere by a colon, then a semicolon, then
// TAG: far less than the classifier reads, but never missing from a To tag.
func hasToTag(upper []byte) bool {
	for _, sep := range [][]byte{[]byte("\nT"), []byte(":"), []byte(";"), []byte("TAG")} {
		i := bytes.Index(upper, sep)
		if i < 0 {
			return false
		}
		upper = upper[i+len(sep):]
	}
	return true
}

// seedFrames are a few valid frames written out by hand, so that this
// package needs none of the test builders.
func seedFrames() [][]byte {
	eth := func(t uint16) []byte {
		return []byte{2, 0, 0x5e, 0, 0x53, 2, 2, 0, 0x5e, 0, 0x53, 1, byte(t >> 8), byte(t)}
	}
	udp4 := func(port uint16, payload []byte) []byte {
		n := 28 + len(payload)
		ip := []byte{0x45, 0, byte(n >> 8), byte(n), 0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2}
		u := []byte{byte(port >> 8), byte(port), byte(port >> 8), byte(port), byte((n - 20) >> 8), byte(n - 20), 0, 0}
		return append(append(append(eth(0x0800), ip...), u...), payload...)
	}
	invite := []byte("INVITE sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1\r\nTo: <sip:b@example.com>\r\n\r\n")
	reinvite := []byte("INVITE sip:b@example.com SIP/2.0\r\nt : \"B\" <sip:b@example.com> ;tag=1\r\n\r\n")
	sccrq := []byte{0xc8, 0x02, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 8, 0, 0, 0, 0, 0, 1}
	return [][]byte{
		append(eth(0x8863), 0x11, 0x09, 0, 0, 0, 0),
		append(append(eth(0x8100), 0, 7, 0x88, 0x63), 0x11, 0x19, 0, 0, 0, 0),
		udp4(1701, sccrq),
		udp4(5060, invite),
		udp4(5060, reinvite),
	}
}

func TestSeedFrames(t *testing.T) {
	ports := NewPorts([]uint16{1701}, []uint16{5060})
	want := []Result{
		{Kind: cac.Session, Class: cac.PPPoEPADI},
		{Kind: cac.Session, Class: cac.PPPoEPADR},
		{Kind: cac.Session, Class: cac.L2TPSCCRQ},
		{Kind: cac.Session, Class: cac.SIPInvite},
		{Kind: cac.InDialog},
	}
	for i, f := range seedFrames() {
		if got := Classify(f, ports); got != want[i] {
			t.Errorf("seed %d: got %v, want %v", i, got, want[i])
		}
	}
}
