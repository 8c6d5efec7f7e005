package fastpath

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/access"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TCP flags as the fast path tests them (TCP_FLAG_SYN, TCP_FLAG_ACK).
const (
	tcpFIN, tcpSYN, tcpRST, tcpPSH, tcpACK = 0x01, 0x02, 0x04, 0x08, 0x10
)

// tcpSegment is a TCP header of 20 bytes, and options of optWords words,
// from src to dst with flags.
func tcpSegment(src, dst uint16, flags byte, optWords int) Raw {
	b := binary.BigEndian.AppendUint16(nil, src)
	b = binary.BigEndian.AppendUint16(b, dst)
	b = append(b, 0, 0, 0, 1, 0, 0, 0, 0, byte(5+optWords)<<4, flags, 0xff, 0xff, 0, 0, 0, 0)
	return Raw(append(b, make([]byte, 4*optWords)...))
}

// TestSIPConnectClassify: a SYN without ACK to a SIP TCP port is a
// sip-connect over IPv4 and IPv6, extension headers or not, whatever other
// flags it has; any other segment is not the filter's, and the program and
// the model agree on each.
func TestSIPConnectClassify(t *testing.T) {
	f := harness.NewFastPath(t, false)
	flags := map[string]byte{
		"syn": tcpSYN, "syn-ack": tcpSYN | tcpACK, "ack": tcpACK, "syn-fin": tcpSYN | tcpFIN,
		"syn-rst": tcpSYN | tcpRST, "syn-psh": tcpSYN | tcpPSH, "none": 0, "fin": tcpFIN, "all": 0xff,
		"syn-ece-cwr": tcpSYN | 0xc0,
	}
	fams := map[string]func(Raw) []byte{
		"v4":         func(s Raw) []byte { return Frame(Ether{}, IPv4{Proto: 6}, s) },
		"v4-options": func(s Raw) []byte { return Frame(Ether{}, IPv4{Proto: 6, Options: make([]byte, 8)}, s) },
		"v4-vlan":    func(s Raw) []byte { return Frame(Ether{}, VLAN{ID: 7}, IPv4{Proto: 6}, s) },
		"v4-first-fragment": func(s Raw) []byte {
			return Frame(Ether{}, IPv4{Proto: 6, MF: true}, s)
		},
		"v6": func(s Raw) []byte { return Frame(Ether{}, IPv6{Next: 6}, s) },
		"v6-ext": func(s Raw) []byte {
			return Frame(Ether{}, IPv6{Next: 6, Ext: []Ext{{Proto: 0}, {Proto: 43, Len: 1}, {Proto: 60}}}, s)
		},
		"v6-first-fragment": func(s Raw) []byte {
			return Frame(Ether{}, IPv6{Next: 6, Ext: []Ext{{Proto: 44, MF: true}}}, s)
		},
	}
	n := 0
	for fam, build := range fams {
		for name, fl := range flags {
			for _, port := range []uint16{5061, 5081, 5060, 443} {
				want := cac.Unwatched
				if fl&(tcpSYN|tcpACK) == tcpSYN && slices.Contains(harness.TestSIPTCPPorts, port) {
					want = cac.Session
				}
				frame := build(tcpSegment(40000, port, fl, n%2))
				n++
				d, err := f.Decide(frame)
				if err != nil {
					t.Errorf("%s %s to %d: %v", fam, name, port, err)
					continue
				}
				if d.Result.Kind != want || (want == cac.Session && d.Result.Class != cac.SIPConnect) {
					t.Errorf("%s %s to %d: %v, want %v", fam, name, port, d.Result, want)
				}
			}
		}
	}
	// Not the filter's: a SYN in a later fragment, or cut short.
	syn := tcpSegment(40000, 5061, tcpSYN, 0)
	for name, frame := range map[string][]byte{
		"v4-later-fragment": Frame(Ether{}, IPv4{Proto: 6, FragOff: 100}, syn),
		"v6-later-fragment": Frame(Ether{}, IPv6{Next: 6, Ext: []Ext{{Proto: 44, FragOff: 100}}}, syn),
		"v4-cut":            Frame(Ether{}, IPv4{Proto: 6}, syn[:19]),
		"v6-cut":            Frame(Ether{}, IPv6{Next: 6}, syn[:19]),
		"v6-ext-cut":        Frame(Ether{}, IPv6{Next: 6, Ext: []Ext{{Proto: 60}}}, syn[:10]),
	} {
		d, err := f.Decide(frame)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if d.Result.Kind != cac.Unwatched {
			t.Errorf("%s: %v, want unwatched", name, d.Result)
		}
	}
}

// randomSegment is a TCP segment in a random frame: random flags, ports,
// families, VLAN tags, IP options, extension headers, fragments and
// truncations, from one of a few sources so that limits bite.
func randomSegment(rng *rand.Rand, sources []netip.Addr) []byte {
	layers := []Layer{Ether{}}
	for n := rng.IntN(4); n > 0; n-- {
		tpids := []uint16{0x8100, 0x88a8, 0x9100}
		layers = append(layers, VLAN{TPID: tpids[rng.IntN(3)], ID: uint16(rng.IntN(4096))})
	}
	src := sources[rng.IntN(len(sources))]
	if src.Is4() {
		ip := IPv4{Src: src, Proto: 6, Options: make([]byte, 4*rng.IntN(3))}
		if rng.IntN(6) == 0 {
			ip.FragOff = uint16(rng.IntN(3))
		}
		ip.MF = rng.IntN(6) == 0
		layers = append(layers, ip)
	} else {
		var ext []Ext
		for n := rng.IntN(3) * rng.IntN(3); n > 0; n-- {
			protos := []uint8{0, 43, 60, 44}
			e := Ext{Proto: protos[rng.IntN(4)], Len: uint8(rng.IntN(2))}
			if e.Proto == 44 {
				e.FragOff, e.MF = uint16(rng.IntN(2)*rng.IntN(50)), rng.IntN(2) == 0
			}
			ext = append(ext, e)
		}
		layers = append(layers, IPv6{Src: src, Next: 6, Ext: ext})
	}
	ports := []uint16{5061, 5081, 5060, 1701, 443, uint16(rng.Uint32())}
	flags := []byte{tcpSYN, tcpSYN, tcpSYN | tcpACK, tcpACK, byte(rng.Uint32())}
	seg := tcpSegment(uint16(rng.Uint32()), ports[rng.IntN(len(ports))], flags[rng.IntN(len(flags))], rng.IntN(3))
	frame := Frame(append(layers, seg)...)
	if rng.IntN(8) == 0 {
		frame = frame[:max(14, len(frame)-1-rng.IntN(30))]
	}
	return frame
}

// TestSIPConnectDifferential holds the program to the model over random TCP
// segments, with the sip-connect class limited per source and as a whole,
// and one source a session agent that may take the class's reserve.
func TestSIPConnectDifferential(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.PerSource[cac.SIPConnect] = policy.PerSource{Limit: harness.MustRate(t, 1, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	p.Levels[cac.SIPConnect] = harness.MustRate(t, 3, 4)
	p.ReserveNS[cac.SIPConnect] = p.Levels[cac.SIPConnect].ToleranceNS / 2
	p.Levels[policy.LevelEnvironment] = harness.MustRate(t, 4, 6)
	p.Agents = []policy.Agent{{Limit: harness.MustRate(t, 0.001, 1)}}
	f.SetPolicy(t, p)
	agent := netip.MustParseAddr("198.51.100.7")
	f.SetAgentAddrs(t, map[netip.Addr]int{agent: 0})
	sources := []netip.Addr{agent, netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("192.0.2.77"),
		netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:0:1::1")}

	rng := rand.New(rand.NewPCG(diffSeed(t), 0x5eed))
	kinds := decideRandom(t, f, rng, 40, func() []byte { return randomSegment(rng, sources) })
	// A generator that never reaches a decision would test nothing there.
	for _, want := range []string{"unwatched", "sip-connect", "sip-connect/source", "sip-connect/class"} {
		if kinds[want] == 0 {
			t.Errorf("no frame decided %s", want)
		}
	}
}

// decideRandom runs 20,000 frames of next through the program and the
// model, the clock moving up to stepMS between them, and tallies their
// decisions by result and reason ("denied" for a denied source's).
func decideRandom(t *testing.T, f *harness.FastPath, rng *rand.Rand, stepMS int, next func() []byte) map[string]int {
	t.Helper()
	now := uint64(1e9)
	kinds := map[string]int{}
	failures := 0
	for i := 0; i < 20_000; i++ {
		now += uint64(rng.IntN(stepMS)) * 1e6
		f.MustAt(t, now)
		frame := next()
		if len(frame) < 14 {
			continue // the kernel refuses frames shorter than Ethernet
		}
		d, err := f.Decide(frame)
		if err != nil {
			failures++
			t.Errorf("frame %d (%x): %v", i, frame, err)
			if failures > 20 {
				t.Fatal("too many differences")
			}
			continue
		}
		key := d.Result.String()
		if d.Denied != access.None {
			key = "denied"
		} else if d.Rejected {
			key += "/" + d.Reason.String()
		}
		kinds[key]++
	}
	t.Logf("by decision: %v", kinds)
	return kinds
}
