package sipd

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestReplyFrame: the answer's frame swaps the request's MAC addresses,
// keeps its VLAN tags in their order, and carries the datagram's own
// EtherType; a header that is not Ethernet with whole tags is refused.
func TestReplyFrame(t *testing.T) {
	caller, box := []byte{2, 0, 0, 0, 0, 1}, []byte{2, 0, 0, 0, 0, 2}
	l2 := append(append(append([]byte{}, box...), caller...), 0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x20, 0x0a, 0x08, 0x00)
	ip := UDPv6(netip.MustParseAddrPort("[2001:db8::2]:5060"), netip.MustParseAddrPort("[2001:db8::1]:5099"), []byte("SIP/2.0 503"))
	f, err := ReplyFrame(l2, ip)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f[0:6], caller) || !bytes.Equal(f[6:12], box) {
		t.Errorf("addresses: to %x from %x, want to the caller %x from the box %x", f[0:6], f[6:12], caller, box)
	}
	if !bytes.Equal(f[12:20], l2[12:20]) {
		t.Errorf("tags %x, want the request's %x", f[12:20], l2[12:20])
	}
	if et := binary.BigEndian.Uint16(f[20:]); et != 0x86dd {
		t.Errorf("EtherType %#x, want IPv6's", et)
	}
	if !bytes.Equal(f[22:], ip) {
		t.Error("the datagram is not the frame's payload")
	}
	for _, bad := range [][]byte{l2[:13], l2[:16]} {
		if _, err := ReplyFrame(bad, ip); err == nil {
			t.Errorf("a link-layer header of %d bytes was taken", len(bad))
		}
	}
}

// TestIPv4Checksum: the header checksum a packet socket must write makes
// the header's words sum to all ones (RFC 1071).
func TestIPv4Checksum(t *testing.T) {
	ip := UDPv4(netip.MustParseAddrPort("192.0.2.1:5060"), netip.MustParseAddrPort("198.51.100.7:5099"), []byte("SIP/2.0 503 x"))
	binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip[:20]))
	sum := words(ip[:20])
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	if sum != 0xffff {
		t.Errorf("header with checksum %#x sums to %#x", binary.BigEndian.Uint16(ip[10:]), sum)
	}
}
