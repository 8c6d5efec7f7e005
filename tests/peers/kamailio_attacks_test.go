package peers

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"time"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// attackCases are the forms an attacker found walking through the filter
// untouched, each now a case of TestKamailioReceiver: bytes Kamailio skips
// before the request line, first lines it takes for an unknown method,
// To tags it reads as none, a UDP length of 0 over IPv6, and Call-IDs that
// differ only past the bytes a header is hashed by. Each names the class
// Kamailio acts on, which must have been charged for every request it
// handled.
func attackCases() []kamCase {
	prefixed := func(name, prefix, method, class string) kamCase {
		return kamCase{name: name, class: class, frames: oneFrame(func(s netip.Addr, id string) string {
			return prefix + kamRequest(method, s, id)
		})}
	}
	withTo := func(name, to string) kamCase {
		return kamCase{name: name, class: "sip-invite", frames: oneFrame(func(s netip.Addr, id string) string {
			return sipText("INVITE sip:bob@example.com SIP/2.0", replaceHeader(kamHeaders("INVITE", s, id), "To:", to), "")
		})}
	}
	cases := []kamCase{
		prefixed("sp-invite", " ", "INVITE", "sip-invite"),
		prefixed("ht-invite", "\t", "INVITE", "sip-invite"),
		prefixed("nul-invite", "\x00", "INVITE", "sip-invite"),
		prefixed("nul-options", "\x00\x00", "OPTIONS", "sip-options"),
		prefixed("sp-register", " ", "REGISTER", "sip-register"),
		prefixed("crlf20-invite", strings.Repeat("\r\n", 20), "INVITE", "sip-invite"),
		prefixed("ws600-invite", strings.Repeat(" \t\r\n\x00", 120), "INVITE", "sip-invite"),
		// An unknown method to Kamailio, answered 405.
		prefixed("bom-invite", "\xef\xbb\xbf", "INVITE", "sip-other"),
		prefixed("hash-invite", "#", "INVITE", "sip-other"),
		withTo("tag-quoted-empty", `To: Bob <sip:bob@example.com>;tag=""`),
		withTo("tag-then-empty", "To: Bob <sip:bob@example.com>;tag=abc;tag="),
		withTo("tag-bare", "To: Bob <sip:bob@example.com>;tag"),
		{name: "v6-udp-len0", v6: true, class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.udpZeroLen(src, kamRequest("INVITE", src, id))}
		}},
		// Call-IDs alike in their first 300 bytes, one branch for all:
		// one transaction to a filter that hashed only the start of each.
		{name: "long-callid", class: "sip-invite", frames: oneFrame(func(s netip.Addr, id string) string {
			dot := strings.IndexByte(id, '.') + 1
			long := id[:dot] + strings.Repeat("x", 300) + id[dot:]
			h := replaceHeader(kamHeaders("INVITE", s, long), "Via:", "Via: SIP/2.0/UDP "+netip.AddrPortFrom(s, 5062).String()+";branch=z9hG4bK-one")
			return sipText("INVITE sip:bob@example.com SIP/2.0", h, "")
		})},
		// Surplus priority tags are taken out as Linux takes them out.
		{name: "prio-tags4", class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.tagged(4, src, kamRequest("INVITE", src, id))}
		}},
		{name: "prio-tags12", class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.tagged(12, src, kamRequest("INVITE", src, id))}
		}},
		// Sixteen extension headers are walked; Linux handed Kamailio
		// no INVITE behind more than twelve (docs/design.md, "Outer
		// layers").
		{name: "v6-ext9", v6: true, class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.udpFrame(src, harness.Exts(9), kamRequest("INVITE", src, id))}
		}},
		{name: "v6-ext10", v6: true, class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.udpFrame(src, harness.Exts(10), kamRequest("INVITE", src, id))}
		}},
		{name: "v6-ext11", v6: true, class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.udpFrame(src, harness.Exts(11), kamRequest("INVITE", src, id))}
		}},
		{name: "v6-ext12", v6: true, class: "sip-invite", frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
			return [][]byte{b.udpFrame(src, harness.Exts(12), kamRequest("INVITE", src, id))}
		}},
	}
	return cases
}

// udpZeroLen is udpFrame over IPv6 with a UDP length of 0, which Linux
// reads as the whole payload; the checksum's pseudo-header has the real
// length, as it has for a jumbogram (RFC 2675).
func (b *kamBed) udpZeroLen(src netip.Addr, payload string) []byte {
	dst := netip.MustParseAddr(kamBoxV6)
	u := udpWithSum(src, dst, 5062, 5060, []byte(payload))
	n := binary.BigEndian.Uint16(u[4:])
	binary.BigEndian.PutUint16(u[4:], 0)
	// The length field left the sum the checksum complements: the
	// checksum grows by it, in ones' complement.
	sum := uint32(binary.BigEndian.Uint16(u[6:])) + uint32(n)
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	c := uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return Frame(Ether{Src: b.peerMAC, Dst: b.boxMAC}, IPv6{Src: src, Dst: dst, Next: 17}, u)
}

// tagged is udpFrame over IPv4 behind n priority tags (VID 0), which Linux
// strips however many there are.
func (b *kamBed) tagged(n int, src netip.Addr, payload string) []byte {
	dst := netip.MustParseAddr(kamBoxV4)
	layers := []Layer{Ether{Src: b.peerMAC, Dst: b.boxMAC}}
	for range n {
		layers = append(layers, VLAN{})
	}
	layers = append(layers, IPv4{Src: src, Dst: dst, Proto: 17}, udpWithSum(src, dst, 5062, 5060, []byte(payload)))
	return Frame(layers...)
}

// TestKamailioReplayedCallID: a Call-ID learnt from an admitted INVITE and
// replayed by a stranger in forged BYEs with invented tags is no dialog of
// the stranger's: Kamailio gets no more of them than the stranger's
// sip-indialog bucket allows (burst 1, 1 a second), none counted
// verified, while the caller's own BYE passes verified.
func TestKamailioReplayedCallID(t *testing.T) {
	b := newKamBed(t, kamailioClasses)
	caller, stranger := b.source(t, 90, false), b.source(t, 91, false)
	id := "replay." + testenv.Unique("")
	testenv.Send(t, b.Peer, b.PeerIfc, [][]byte{b.udpFrame(caller, nil, kamRequest("INVITE", caller, id))})
	if !testenv.Poll(2*time.Second, 10*time.Millisecond, func() bool { return b.k.Count(id) == 1 }) {
		t.Fatal("Kamailio never got the caller's INVITE")
	}
	bye := func(src netip.Addr, i int) []byte {
		h := replaceHeader(kamHeaders("BYE", src, id), "To:", "To: Bob <sip:bob@example.com>;tag=forged-"+string(rune('a'+i%26)))
		return b.udpFrame(src, nil, sipText("BYE sip:bob@example.com SIP/2.0", h, ""))
	}
	_, before := b.charged(t)
	var frames [][]byte
	for i := range kamBurst {
		frames = append(frames, bye(stranger, i))
	}
	start := time.Now()
	testenv.Send(t, b.Peer, b.PeerIfc, frames)
	limit := 1 + int(time.Since(start).Seconds()) + 1
	byes := func() int {
		n := 0
		for _, r := range b.k.Requests() {
			if r.CallID == id && r.Method == "BYE" {
				n++
			}
		}
		return n
	}
	b.settle(id)
	got := byes()
	_, after := b.charged(t)
	t.Logf("stranger's forged BYEs: %d sent, %d reached Kamailio (limit %d); verified %d",
		kamBurst, got, limit, after.SIPInDialogVerified-before.SIPInDialogVerified)
	if got > limit {
		t.Errorf("%d of the stranger's BYEs reached Kamailio, more than its sip-indialog bucket allows (%d)", got, limit)
	}
	if after.SIPInDialogVerified != before.SIPInDialogVerified {
		t.Errorf("%d of the stranger's BYEs counted verified", after.SIPInDialogVerified-before.SIPInDialogVerified)
	}
	testenv.Send(t, b.Peer, b.PeerIfc, [][]byte{bye(caller, 0)})
	if !testenv.Poll(2*time.Second, 10*time.Millisecond, func() bool { return byes() == got+1 }) {
		t.Error("the caller's own BYE did not reach Kamailio")
	}
	if _, v := b.charged(t); v.SIPInDialogVerified != after.SIPInDialogVerified+1 {
		t.Errorf("the caller's BYE: verified %d, want 1", v.SIPInDialogVerified-after.SIPInDialogVerified)
	}
}
