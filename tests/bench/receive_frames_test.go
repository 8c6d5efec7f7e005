package bench

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	. "github.com/xdpcac/xdpcac/internal/pkt"
)

// rcvMaxFrame is the largest frame the live-frame generator sends: a page
// less the XDP headroom (256), the skb_shared_info at its end (320) and
// the page head BPF_PROG_TEST_RUN's live-frame mode keeps in front of
// the frame (struct xdp_page_head, 112 bytes on Linux 6.18 x86-64), which
// refuses a larger one (EINVAL). veth takes it in native mode: its MTU
// for an XDP program without frags support goes to 3506 (jumbo).
const rcvMaxFrame = 4096 - 256 - 320 - 112

// The bounds of the filter the worst-case INVITE is built to, as
// bpf/shared.h has them: the IPv6 extension headers parse_ipv6 walks, the
// header lines and bytes sip_to_headers reads for a To header, the bytes
// of a To value it reads for a tag, and of a Call-ID or Via it hashes.
const (
	worstExtHeaders = 16   // CAC_MAX_EXTHDRS
	worstScan       = 2048 // SIP_SCAN_MAX: a header line must start before it
	worstLines      = 64   // SIP_MAX_LINES: the To header is the 64th
	worstToMax      = 256  // SIP_TO_MAX
	worstHashMax    = 256  // SIP_HASH_MAX
)

// callRun is how many bytes of a Call-ID and of a Via branch the generator
// writes anew in every frame (spoofGen's calls).
const callRun = 8

// callOffsets returns where, in frame, the generator writes a new call:
// the first callRun bytes of the Call-ID's value and of the top Via's
// branch after its magic cookie. It fails unless both are there, that
// long, and made of token characters, so that the frame stays the same
// SIP message with other letters in it.
func callOffsets(tb testing.TB, frame []byte) []int {
	tb.Helper()
	var offs []int
	for _, mark := range []string{"\r\nCall-ID: ", ";branch=z9hG4bK"} {
		i := bytes.Index(frame, []byte(mark))
		if i < 0 {
			tb.Fatalf("no %q in the frame", mark)
		}
		at := i + len(mark)
		for j := at; j < at+callRun; j++ {
			if j >= len(frame) || !isToken(frame[j]) {
				tb.Fatalf("%q is followed by fewer than %d token bytes", mark, callRun)
			}
		}
		offs = append(offs, at)
	}
	return offs
}

func isToken(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-.!%*_+`'~", c) >= 0
}

// sdpInvite is the INVITE a softphone sends to open an audio call: the
// headers a real one carries, an untagged To, and an SDP offer of five
// codecs and telephone events, about 900 bytes in a frame over IPv4.
func sdpInvite(src netip.Addr) SIP {
	a := src.String()
	sdp := strings.Join([]string{
		"v=0",
		"o=alice 2890844526 2890844526 IN IP4 " + a,
		"s=-",
		"c=IN IP4 " + a,
		"t=0 0",
		"m=audio 49170 RTP/AVP 0 8 9 18 101",
		"a=rtpmap:0 PCMU/8000",
		"a=rtpmap:8 PCMA/8000",
		"a=rtpmap:9 G722/8000",
		"a=rtpmap:18 G729/8000",
		"a=fmtp:18 annexb=no",
		"a=rtpmap:101 telephone-event/8000",
		"a=fmtp:101 0-16",
		"a=ptime:20",
		"a=sendrecv",
	}, "\r\n") + "\r\n"
	return SIP{Method: "INVITE", URI: "sip:bob@example.com", Body: sdp, Headers: []string{
		"Via: SIP/2.0/UDP " + a + ":5060;branch=z9hG4bK74bf9c3e1a;rport",
		"Max-Forwards: 70",
		`From: "Alice" <sip:alice@example.com>;tag=9fxced76sl`,
		"To: <sip:bob@example.com>",
		"Call-ID: 3848276298220188511@" + a,
		"CSeq: 1 INVITE",
		"Contact: <sip:alice@" + a + ":5060;transport=udp>",
		"Allow: INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE, REFER, NOTIFY, PRACK, MESSAGE",
		"Supported: replaces, timer, 100rel, norefersub",
		"Session-Expires: 1800",
		"User-Agent: Linphone/5.2.5 (belle-sip/5.2.5)",
		"Content-Type: application/sdp",
		fmt.Sprintf("Content-Length: %d", len(sdp)),
	}}
}

// worstTo is the value of the worst INVITE's To header: a URI, then
// parameters of one letter up to 253 bytes, so that with its CRLF it ends
// within the SIP_TO_MAX bytes after the colon that sip_to_tagged reads.
// Every semicolon is a step of that reading and a call of sip_tag_at, and
// a "t" makes sip_tag_at look on for "ag": of the values tried
// (parameters, escaped quotes, URI parameters, empty tags), the dearest,
// about twice a plain To's cost. Since SIP_TO_STEPS the reading stops
// after 32 steps, so the rest of it costs nothing.
var worstTo = "<sip:bob@example.com>" + strings.Repeat(";t", (worstToMax-3-21)/2)

// worstIPv6 is an IPv6 header with every extension header parse_ipv6
// walks: destination options of 8 bytes each.
func worstIPv6(src, dst netip.Addr) IPv6 {
	ip := IPv6{Src: src, Dst: dst}
	for range worstExtHeaders {
		ip.Ext = append(ip.Ext, Ext{Proto: 60})
	}
	return ip
}

// worstMessage is the worst INVITE's SIP message without its leading
// bytes: 64 header lines, the last an untagged To (worstTo) that starts
// on the last byte sip_to_headers scans for a line (worstScan-1), so that
// every line before it is read, and read whole. The transaction's
// headers (top Via, Call-ID, CSeq) are the last before To, so that every
// line before them is also looked at for one of them (txn_note), and the
// Via and Call-ID values are as long as sip_hash_value hashes, so that
// all of them is hashed. Fillers take the lines and bytes left, named
// with a C, so that each is also looked at as a Call-ID or CSeq might be
// (the walk passes over lines of other letters, SIP_TXN_LINE); late
// adds that many bytes to them, to put To past the bound in a test.
func worstMessage(tb testing.TB, a string, late int) SIP {
	tb.Helper()
	pad := func(v string, n int) string { return v + strings.Repeat("x", n-len(v)) }
	// The values end 8 bytes short of worstHashMax: with their CRLF they
	// end within the words hashed, or the hash is cut and names no
	// transaction, which costs less.
	via := "Via: " + pad("SIP/2.0/UDP ["+a+"]:5060;branch=z9hG4bK74bf9c3e1a;rport;x=", worstHashMax-8)
	callID := "Call-ID: " + pad("3848276298220188511", worstHashMax-8-len(a)-1) + "@" + a
	fixed := []string{
		"Max-Forwards: 70",
		`From: "Alice" <sip:alice@example.com>;tag=9fxced76sl`,
		"Contact: <sip:alice@[" + a + "]:5060>",
		"Content-Length: 0",
	}
	tail := []string{via, callID, "CSeq: 1 INVITE"}
	msg := SIP{Method: "INVITE", URI: "sip:bob@example.com"}
	used := len(fmt.Sprintf("%s %s SIP/2.0\r\n", msg.Method, msg.URI))
	for _, h := range append(fixed, tail...) {
		used += len(h) + 2
	}
	nFill := worstLines - 1 - len(fixed) - len(tail)
	left := worstScan - 1 - used + late
	const name = "C-Filler-00: "
	if left < nFill*(len(name)+1+2) {
		tb.Fatalf("worst INVITE: %d bytes for %d fillers", left, nFill)
	}
	var fill []string
	for i := range nFill {
		n := left / (nFill - i) // with its name and CRLF
		left -= n
		fill = append(fill, fmt.Sprintf("C-Filler-%02d: ", i)+strings.Repeat("f", n-len(name)-2))
	}
	msg.Headers = append(append(append(fixed, fill...), tail...), "To: "+worstTo)
	return msg
}

// worstInvite is the most expensive INVITE the filter's bounds let it
// read and still charge as a new call: worstMessage behind worstIPv6,
// with as many leading CRLFs before the request line (bpf/sip.h skips up
// to SIP_LEAD_MAX, a word at a time) as fill the largest frame the
// testbed sends, rcvMaxFrame.
func worstInvite(tb testing.TB, eth Ether, src, dst netip.Addr) []byte {
	tb.Helper()
	msg := worstMessage(tb, src.String(), 0)
	ip, udp := worstIPv6(src, dst), UDP{Src: 5060, Dst: 5060}
	lead := rcvMaxFrame - len(Frame(eth, ip, udp, msg))
	if lead < 0 {
		tb.Fatalf("worst INVITE: %d bytes without leading bytes, past %d", rcvMaxFrame-lead, rcvMaxFrame)
	}
	msg.Prefix = strings.Repeat("\r\n", lead/2) + strings.Repeat(" ", lead%2)
	return Frame(eth, ip, udp, msg)
}
