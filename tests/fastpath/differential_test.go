package fastpath

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// differentialFrames is how many random and mutated frames the differential
// test runs; XDPCAC_DIFF_FRAMES raises it for a longer soak.
func differentialFrames(t *testing.T) int {
	n := 120_000
	if s := os.Getenv("XDPCAC_DIFF_FRAMES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("XDPCAC_DIFF_FRAMES=%q: %v", s, err)
		}
		n = v
	}
	return n
}

// diffSeed is a random seed for a differential test, or XDPCAC_DIFF_SEED
// to replay one; it is logged either way.
func diffSeed(t *testing.T) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv("XDPCAC_DIFF_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("XDPCAC_DIFF_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (XDPCAC_DIFF_SEED=%d replays this run)", seed, seed)
	return seed
}

// TestDifferential holds the XDP object to the reference model over random
// and mutated frames. The seed is logged, and XDPCAC_DIFF_SEED replays it.
func TestDifferential(t *testing.T) {
	f := harness.NewFastPath(t, false)
	seed := diffSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))

	seeds := append(harness.SessionFrames(), harness.EdgeFrames()...)
	kinds := map[classify.Result]int{}
	failures := 0
	n := differentialFrames(t)
	for i := 0; i < n; i++ {
		var frame []byte
		switch i % 4 {
		case 0:
			frame = randomFrame(rng)
		default:
			frame = mutate(rng, seeds[rng.IntN(len(seeds))].Frame)
		}
		if len(frame) < 14 {
			continue // the kernel refuses frames shorter than Ethernet
		}
		kinds[classify.Classify(frame, f.Model.Ports)]++
		if err := f.Check(frame); err != nil {
			failures++
			t.Errorf("frame %d (%x): %v", i, frame, err)
			if failures > 20 {
				t.Fatal("too many differences")
			}
		}
	}
	t.Logf("%d frames, by model result: %v", n, kinds)
	// A generator that never reaches a kind would test nothing there.
	for _, want := range []cac.Kind{cac.Unwatched, cac.Session, cac.Other, cac.InDialog, cac.Fragment, cac.Malformed} {
		found := false
		for r := range kinds {
			found = found || r.Kind == want
		}
		if !found {
			t.Errorf("no frame of kind %v was generated", want)
		}
	}
}

// mutate changes a valid frame a little: the frames that find parser bugs
// are nearly right.
func mutate(rng *rand.Rand, in []byte) []byte {
	b := append([]byte(nil), in...)
	for n := 1 + rng.IntN(3); n > 0; n-- {
		switch rng.IntN(7) {
		case 0: // flip a bit
			i := rng.IntN(len(b))
			b[i] ^= 1 << rng.IntN(8)
		case 1: // set a byte to an interesting value
			vals := []byte{0, 1, 0x7f, 0x80, 0xff, '\n', '\r', ' ', ';', ':', '<', '>', '"', '\\', 't', 'T'}
			b[rng.IntN(len(b))] = vals[rng.IntN(len(vals))]
		case 2: // truncate
			b = b[:14+rng.IntN(len(b)-13)]
		case 3: // append junk
			extra := make([]byte, rng.IntN(64))
			for i := range extra {
				extra[i] = byte(rng.Uint32())
			}
			b = append(b, extra...)
		case 4: // insert text near the end, where SIP headers are
			text := []string{"\r\n", "\r\n ", ";tag=1", "To:", "t :", "\"", "<", ">", "\\"}[rng.IntN(9)]
			i := len(b) - rng.IntN(min(len(b)-14, 120)+1)
			b = append(b[:i], append([]byte(text), b[i:]...)...)
		case 5: // delete a byte past the Ethernet header
			if len(b) > 15 {
				i := 14 + rng.IntN(len(b)-14)
				b = append(b[:i], b[i+1:]...)
			}
		case 6: // rewrite a length field at random: IPv4 total, UDP, PPPoE, L2TP
			if len(b) > 40 {
				i := 14 + rng.IntN(min(len(b)-15, 80))
				b[i], b[i+1] = byte(rng.Uint32()), byte(rng.Uint32())
			}
		}
	}
	return b
}

// randomFrame builds a frame from random layers, some of them wrong.
func randomFrame(rng *rand.Rand) []byte {
	layers := []Layer{Ether{}}
	for n := rng.IntN(4); n > 0; n-- {
		tpids := []uint16{0x8100, 0x88a8, 0x9100}
		layers = append(layers, VLAN{TPID: tpids[rng.IntN(3)], ID: uint16(rng.IntN(4096))})
	}
	ports := []uint16{1701, 1702, 5060, 5080, 53, uint16(rng.Uint32())}
	switch rng.IntN(5) {
	case 0:
		codes := []uint8{PADI, PADO, PADR, PADS, PADT, uint8(rng.Uint32())}
		layers = append(layers, PPPoE{Code: codes[rng.IntN(len(codes))], Session: uint16(rng.IntN(2))})
		return Frame(layers...)
	case 1:
		layers = append(layers, IPv4{FragOff: uint16(rng.IntN(2) * rng.IntN(100)), MF: rng.IntN(4) == 0,
			Options: make([]byte, 4*rng.IntN(4))})
	case 2:
		var ext []Ext
		for n := rng.IntN(6); n > 0; n-- {
			protos := []uint8{0, 43, 60, 44}
			e := Ext{Proto: protos[rng.IntN(4)], Len: uint8(rng.IntN(3))}
			if e.Proto == 44 {
				e.FragOff, e.MF = uint16(rng.IntN(2)*rng.IntN(50)), rng.IntN(2) == 0
			}
			ext = append(ext, e)
		}
		layers = append(layers, IPv6{Ext: ext})
	case 3:
		layers = append(layers, IPv4{}, TCP{Src: 1234, Dst: ports[rng.IntN(len(ports))]})
		return Frame(layers...)
	default:
		b := make([]byte, rng.IntN(200))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		types := []uint16{0x0800, 0x86dd, 0x8863, 0x8864, 0x0806}
		layers[len(layers)-1] = Ether{Type: types[rng.IntN(len(types))]}
		if len(layers) > 1 {
			layers = layers[:1]
			layers[0] = Ether{Type: types[rng.IntN(len(types))]}
		}
		return Frame(append(layers, Raw(b))...)
	}
	layers = append(layers, UDP{Dst: ports[rng.IntN(len(ports))]})
	switch rng.IntN(3) {
	case 0:
		msgs := []uint16{SCCRQ, SCCRP, ICRQ, ICRP, uint16(rng.IntN(20))}
		layers = append(layers, L2TP{Version: uint8(2 + rng.IntN(2)), MsgType: msgs[rng.IntN(len(msgs))]})
	default:
		methods := []string{"INVITE", "OPTIONS", "BYE", "ACK", "invite"}
		tos := []string{harness.ToNoTag, harness.ToTag, `"a;tag=1" <sip:b@x>`, "<sip:b@x;tag=1>", "<sip:b@x> ; TAG = z", "sip:b@x;tag=",
			// About SIP_TO_STEPS: 31, 32 and 33 steps to the end of the line.
			"<sip:b@x" + strings.Repeat(";p", 27) + ">;tag=1", "<sip:b@x" + strings.Repeat(";p", 28) + ">;tag=1",
			"<sip:b@x" + strings.Repeat(";p", 29) + ">;tag=1"}
		layers = append(layers, SIPRequest(methods[rng.IntN(len(methods))], tos[rng.IntN(len(tos))]))
	}
	return Frame(layers...)
}
