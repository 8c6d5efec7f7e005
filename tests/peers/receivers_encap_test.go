package peers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// The encapsulation mutations of the receiver differential: the frame
// around a message varies, not only the message. Priority tags between
// Ethernet and IP, IPv4 options, IPv6 extension headers, and the datagram
// in two or three fragments that the box's kernel puts together again for
// Kamailio. Each is a layer the filter must walk as Linux does: a request
// that reaches Kamailio however it was wrapped must be charged as the
// same request unwrapped.
//
// They are drawn from a generator of their own (seed and message number,
// salted), so that the message part of message n of seed s is what it
// was before they existed, and half the messages keep the plain frame.

// fzEncapSalt sets the encapsulation's generator apart from the message's.
const fzEncapSalt = 0x656e63617073 // "encaps"

// fzFrameMax is what a frame may carry after its Ethernet header: the
// veth's MTU, which the packet socket holds the tags to as well.
const fzFrameMax = 3000

// fzTagRoom is kept free in every fragment for the most tags drawn.
const fzTagRoom = 16 * 4

// fzTag is a priority tag: a TPID and a TCI of VID 0 (priority and DEI
// bits drawn), which Linux takes out of a frame however many there are.
type fzTag struct{ tpid, tci uint16 }

// fzEncap is the frame around a message, beyond the IPv6 extension
// headers fzCase.ext has always held.
type fzEncap struct {
	tags []fzTag // outermost first
	opts []byte  // IPv4 options, before padding to a multiple of 4
	// frags are the sizes of all fragments but the last, in bytes of the
	// fragmentable part (the UDP datagram, over IPv6 after the last
	// after extension headers, which go behind the fragment header):
	// multiples of 8, the first holding the UDP header.
	frags []int
	after int
}

// firstPayload is how many bytes of the message the first fragment holds.
func (e fzEncap) firstPayload() int { return e.frags[0] - 8 - 8*e.after }

func (e fzEncap) String() string {
	var p []string
	if len(e.tags) > 0 {
		p = append(p, fmt.Sprintf("%d priority tags %s", len(e.tags), e.tagList()))
	}
	if len(e.opts) > 0 {
		p = append(p, fmt.Sprintf("IPv4 options %x", e.opts))
	}
	if len(e.frags) > 0 {
		p = append(p, fmt.Sprintf("%d fragments cut at %s bytes of the fragmentable part, the first with %d bytes of the message",
			len(e.frags)+1, e.fragList(), e.firstPayload()))
	}
	if e.after > 0 {
		p = append(p, fmt.Sprintf("%d destination options after the fragment header", e.after))
	}
	return strings.Join(p, ", ")
}

// tagList is e's tags as TPID:TCI in hex, outermost first.
func (e fzEncap) tagList() string {
	var t []string
	for _, g := range e.tags {
		t = append(t, fmt.Sprintf("%04x:%04x", g.tpid, g.tci))
	}
	return strings.Join(t, " ")
}

// fragList is the sizes of e's fragments but the last.
func (e fzEncap) fragList() string { return strings.Trim(fmt.Sprint(e.frags), "[]") }

// fzEncapsulate draws message n's frame: nothing for half the messages,
// else one to three of the kinds of its family, each noted in m.muts.
func fzEncapsulate(seed uint64, n int, m *fzMsg) {
	r := rand.New(rand.NewPCG(seed^fzEncapSalt, uint64(n)))
	if r.IntN(2) == 0 {
		return
	}
	picked := r.Perm(3)[:1+r.IntN(3)]
	// In this order: the fragments' sizes need the IP header's, the tags
	// go in what room the largest frame leaves.
	if slices.Contains(picked, 0) {
		if m.v6 {
			m.ext = harness.Exts(1 + r.IntN(12))
			// These replace the base's extension headers.
			m.muts = slices.DeleteFunc(m.muts, func(s string) bool { return strings.HasPrefix(s, "v6-ext") })
			m.muts = append(m.muts, fmt.Sprintf("v6-exts:%d", len(m.ext)))
		} else {
			m.encap.opts = fzIPv4Options(r)
			m.muts = append(m.muts, fmt.Sprintf("ipv4-options:%x", m.encap.opts))
		}
	}
	if slices.Contains(picked, 1) {
		fzFragment(r, m)
	}
	if slices.Contains(picked, 2) {
		k := 1 + r.IntN(3)
		if r.IntN(2) == 0 {
			k = 1 + r.IntN(16)
		}
		k = min(k, (fzFrameMax-fzLargest(m))/4)
		for range k {
			tci := uint16(r.IntN(8))<<13 | uint16(r.IntN(4)/3)<<12
			m.encap.tags = append(m.encap.tags, fzTag{[]uint16{0x8100, 0x88a8}[r.IntN(2)], tci})
		}
		if k > 0 {
			m.muts = append(m.muts, fmt.Sprintf("vlan:%d", k))
		}
	}
}

// fzIPHeader is the IP header's size in the frames of m; over IPv4 the
// first's, which carries every option.
func fzIPHeader(m *fzMsg) int {
	if !m.v6 {
		return 20 + (len(m.encap.opts)+3)&^3
	}
	n := 40
	for _, e := range m.ext[:len(m.ext)-m.encap.after] {
		n += 8 * (int(e.Len) + 1)
	}
	if len(m.encap.frags) > 0 {
		n += 8
	}
	return n
}

// fzLargest is the size of m's largest frame after its Ethernet header,
// without tags.
func fzLargest(m *fzMsg) int {
	last := 8 + 8*m.encap.after + len(m.bytes())
	big := 0
	for _, n := range m.encap.frags {
		last -= n
		big = max(big, n)
	}
	return fzIPHeader(m) + max(big, last)
}

// fzFragment splits m's datagram into two or three fragments. The first
// holds the UDP header and no more, 8 bytes of the message, a few more,
// the headers up to just short of the blank line or with it, or a cut
// anywhere: the forms that show the filter less than the method, or the
// method and not the To header, or all headers but not their end.
func fzFragment(r *rand.Rand, m *fzMsg) {
	msg := m.bytes()
	if m.v6 {
		// Any of the trailing destination options may follow the
		// fragment header: Linux reads them after reassembly.
		trail := 0
		for i := len(m.ext) - 1; i >= 1 && m.ext[i].Proto == 60; i-- {
			trail++
		}
		m.encap.after = r.IntN(trail + 1)
	}
	head := 8 + 8*m.encap.after // in the first fragment before the message
	ip := fzIPHeader(m)
	if m.v6 {
		ip += 8 // the fragment header, not yet counted
	}
	room := (fzFrameMax - fzTagRoom - ip) &^ 7 // the most one fragment carries
	var p int
	switch r.IntN(7) {
	case 0:
		p = 0
	case 1:
		p = 8
	case 2:
		p = 8 * (2 + r.IntN(7))
	case 3:
		end := len(msg)
		for _, sep := range []string{"\r\n\r\n", "\n\n"} {
			if i := bytes.Index(msg, []byte(sep)); i >= 0 {
				end = min(end, i+len(sep))
			}
		}
		p = end &^ 7
		if r.IntN(2) == 0 {
			p = (end + 7) &^ 7
		}
	default:
		p = 8 * r.IntN(len(msg)/8+1)
	}
	p = min(p, (len(msg)-1)&^7, (room-head)&^7)
	m.encap.frags = []int{head + p}
	if rest := len(msg) - p; rest > 8 && (r.IntN(2) == 0 || rest > room) {
		// A second cut, leaving neither part larger than a frame takes.
		lo, hi := max(8, (rest-room+7)&^7), min(room, (rest-1)&^7)
		m.encap.frags = append(m.encap.frags, lo+8*r.IntN((hi-lo)/8+1))
	}
	m.muts = append(m.muts, fmt.Sprintf("fragment:%d cut at %s", len(m.encap.frags)+1, m.encap.fragList()))
}

// fzIPv4Options are options Linux takes on a datagram it delivers, one to
// four of them, at most 40 bytes: NOPs, router alert, record route and
// timestamp with room left or none, security, stream ID, an option of no
// known kind, and an end of list with bytes after it (which Linux zeroes).
// No source route (it would be forwarded) and no CIPSO (dropped unless
// configured).
func fzIPv4Options(r *rand.Rand) []byte {
	var o []byte
	for k := 1 + r.IntN(4); k > 0; k-- {
		var add []byte
		switch r.IntN(8) {
		case 0:
			add = bytes.Repeat([]byte{1}, 1+r.IntN(4))
		case 1:
			add = []byte{0x94, 4, 0, 0}
		case 2: // record route: pointer at a free slot or past the last
			n := 1 + r.IntN(9)
			add = append([]byte{7, byte(3 + 4*n), byte(4 + 4*r.IntN(n+1))}, make([]byte, 4*n)...)
		case 3: // timestamps only
			n := 1 + r.IntN(9)
			add = append([]byte{68, byte(4 + 4*n), byte(5 + 4*r.IntN(n+1)), 0}, make([]byte, 4*n)...)
		case 4:
			add = append([]byte{130, 11}, make([]byte, 9)...)
		case 5:
			add = []byte{136, 4, 0x12, 0x34}
		case 6:
			n := 2 + r.IntN(5)
			add = append([]byte{[]byte{0x9e, 0x1e, 0x5e}[r.IntN(3)], byte(n)}, make([]byte, n-2)...)
		default:
			add = append([]byte{0}, bytes.Repeat([]byte{0xab}, r.IntN(8))...)
			k = 1
		}
		if len(o)+len(add) > 40 {
			break
		}
		o = append(o, add...)
	}
	if len(o) == 0 {
		o = []byte{1}
	}
	return o
}

// fzCopied is the options of opts a router copies into every fragment:
// those with the copied bit, up to the end of the list (or of what reads
// as options, for a corpus file's).
func fzCopied(opts []byte) []byte {
	var c []byte
	for i := 0; i < len(opts) && opts[i] != 0; {
		n := 1
		if opts[i] != 1 {
			if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
				break
			}
			n = int(opts[i+1])
		}
		if opts[i]&0x80 != 0 {
			c = append(c, opts[i:i+n]...)
		}
		i += n
	}
	return c
}

// frames is c's message in its frame or frames, from src to the box's
// address of its family. Each fragmented message takes an identification
// of its own, never 0 in its low 16 bits (which pkt reads as unset): a
// datagram the kernel never completed must not take in another's parts.
func (b *fzBed) frames(src netip.Addr, c *fzCase) [][]byte {
	dst := netip.MustParseAddr(kamBoxV4)
	inner := uint16(0x0800)
	if c.v6 {
		dst, inner = netip.MustParseAddr(kamBoxV6), 0x86dd
	}
	udp := udpWithSum(src, dst, 5062, 5060, c.msg)
	e := c.encap
	l2 := []Layer{Ether{Src: b.peerMAC, Dst: b.boxMAC}}
	if len(e.tags) > 0 {
		var tags []byte
		for i, g := range e.tags {
			next := inner
			if i+1 < len(e.tags) {
				next = e.tags[i+1].tpid
			}
			tags = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(tags, g.tci), next)
		}
		l2 = []Layer{Ether{Src: b.peerMAC, Dst: b.boxMAC, Type: e.tags[0].tpid}, Raw(tags)}
	}
	frame := func(l ...Layer) []byte { return Frame(append(slices.Clone(l2), l...)...) }
	if len(e.frags) == 0 {
		if c.v6 {
			return [][]byte{frame(IPv6{Src: src, Dst: dst, Ext: c.ext, Next: 17}, udp)}
		}
		return [][]byte{frame(IPv4{Src: src, Dst: dst, Proto: 17, Options: e.opts}, udp)}
	}
	if b.fragID++; uint16(b.fragID) == 0 {
		b.fragID++
	}
	id := b.fragID
	part, before := []byte(udp), c.ext[:len(c.ext)-e.after]
	if c.v6 {
		// The trailing destination options as pkt encodes them.
		part = Frame(IPv6{Ext: c.ext[len(c.ext)-e.after:], Next: 17}, udp)[40:]
	}
	var out [][]byte
	for i, off := 0, 0; off < len(part); i++ {
		n := len(part) - off
		if i < len(e.frags) {
			n = e.frags[i]
		}
		more, data := i < len(e.frags), part[off:off+n]
		if c.v6 {
			next := uint8(17)
			if e.after > 0 {
				next = 60
			}
			field := uint16(off) // the offset in 8-byte units, shifted left by 3
			if more {
				field |= 1
			}
			fh := binary.BigEndian.AppendUint16([]byte{next, 0}, field)
			fh = binary.BigEndian.AppendUint32(fh, id)
			out = append(out, frame(IPv6{Src: src, Dst: dst, Ext: before, Next: 44}, Raw(append(fh, data...))))
		} else {
			opts := e.opts
			if i > 0 {
				opts = fzCopied(opts)
			}
			out = append(out, frame(IPv4{Src: src, Dst: dst, Proto: 17, ID: uint16(id), MF: more,
				FragOff: uint16(off / 8), Options: opts}, Raw(data)))
		}
		off += n
	}
	return out
}
