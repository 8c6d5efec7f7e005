package sipd

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestUDPChecksums: the datagrams RawUDP sends carry UDP checksums that
// verify (the one's complement sum over the pseudo-header and the datagram
// is all ones), and headers that say what they carry.
func TestUDPChecksums(t *testing.T) {
	for _, c := range []struct {
		src, dst string
		ipLen    int
	}{
		{"198.51.100.1:5060", "203.0.113.9:40123", 20},
		{"[2001:db8::1]:5060", "[2001:db8:1::9]:5062", 40},
	} {
		src, dst := netip.MustParseAddrPort(c.src), netip.MustParseAddrPort(c.dst)
		for _, payload := range [][]byte{[]byte("SIP/2.0 503 Service Unavailable\r\n\r\n"), []byte("odd")} {
			var pkt []byte
			var s, d []byte
			if src.Addr().Is4() {
				pkt = UDPv4(src, dst, payload)
				a, b := src.Addr().As4(), dst.Addr().As4()
				s, d = a[:], b[:]
			} else {
				pkt = UDPv6(src, dst, payload)
				a, b := src.Addr().As16(), dst.Addr().As16()
				s, d = a[:], b[:]
			}
			u := pkt[c.ipLen:]
			if got := binary.BigEndian.Uint16(u[0:]); got != src.Port() {
				t.Errorf("%s: source port %d", c.src, got)
			}
			if got := binary.BigEndian.Uint16(u[2:]); got != dst.Port() {
				t.Errorf("%s: destination port %d", c.dst, got)
			}
			if got := int(binary.BigEndian.Uint16(u[4:])); got != 8+len(payload) || string(u[8:]) != string(payload) {
				t.Errorf("%s: UDP length %d, payload %q", c.src, got, u[8:])
			}
			sum := pseudo(s, d, len(u)) + words(u)
			for sum>>16 != 0 {
				sum = sum&0xffff + sum>>16
			}
			if sum != 0xffff {
				t.Errorf("%s → %s, %d bytes: checksum does not verify (sum %#x)", c.src, c.dst, len(payload), sum)
			}
		}
	}
}
