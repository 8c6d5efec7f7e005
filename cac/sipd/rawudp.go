package sipd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// RawUDP sends UDP datagrams from a source address and port of its
// choosing. A 503 for a refused request must leave from the address and
// port the request was sent to (RFC 3261 §18.2.2), or a caller behind NAT
// or a stateful firewall never sees it; the SIP server behind the filter
// holds that port, so no UDP socket can bind it. Raw sockets of protocol
// IPPROTO_RAW only send (the kernel hands them nothing it receives), and
// need CAP_NET_RAW.
type RawUDP struct {
	fd4, fd6 int
}

// ErrNoRawSocket is returned by OpenRawUDP when the process may not open
// raw sockets.
var ErrNoRawSocket = errors.New("raw sockets need CAP_NET_RAW")

// OpenRawUDP opens the IPv4 and IPv6 raw sockets, in the calling thread's
// network namespace.
func OpenRawUDP() (*RawUDP, error) {
	fd4, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, rawErr("IPv4", err)
	}
	fd6, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		unix.Close(fd4)
		return nil, rawErr("IPv6", err)
	}
	return &RawUDP{fd4: fd4, fd6: fd6}, nil
}

func rawErr(family string, err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%s raw socket: %w", family, ErrNoRawSocket)
	}
	return fmt.Errorf("%s raw socket: %w", family, err)
}

// Close closes both sockets.
func (r *RawUDP) Close() error {
	return errors.Join(unix.Close(r.fd4), unix.Close(r.fd6))
}

// Send sends payload from src to dst, which must be of one family.
func (r *RawUDP) Send(src, dst netip.AddrPort, payload []byte) error {
	s, d := src.Addr().Unmap(), dst.Addr().Unmap()
	switch {
	case s.Is4() && d.Is4():
		pkt := UDPv4(netip.AddrPortFrom(s, src.Port()), netip.AddrPortFrom(d, dst.Port()), payload)
		return unix.Sendto(r.fd4, pkt, 0, &unix.SockaddrInet4{Addr: d.As4()})
	case s.Is6() && d.Is6():
		pkt := UDPv6(src, dst, payload)
		return unix.Sendto(r.fd6, pkt, 0, &unix.SockaddrInet6{Addr: d.As16()})
	}
	return fmt.Errorf("send from %v to %v: not one address family", src, dst)
}

// UDPv4 builds an IPv4 datagram carrying payload over UDP; the kernel
// fills in the header checksum and the identification of a raw socket's
// datagram.
func UDPv4(src, dst netip.AddrPort, payload []byte) []byte {
	const ipLen, udpLen = 20, 8
	b := make([]byte, ipLen+udpLen+len(payload))
	b[0] = 0x45 // version 4, 5 words
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[6] = 0x40 // don't fragment
	b[8] = 64   // TTL
	b[9] = unix.IPPROTO_UDP
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	udp(b[ipLen:], src.Port(), dst.Port(), payload, pseudo(s[:], d[:], len(b)-ipLen))
	return b
}

// UDPv6 builds an IPv6 packet carrying payload over UDP.
func UDPv6(src, dst netip.AddrPort, payload []byte) []byte {
	const ipLen, udpLen = 40, 8
	b := make([]byte, ipLen+udpLen+len(payload))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(udpLen+len(payload)))
	b[6] = unix.IPPROTO_UDP
	b[7] = 64 // hop limit
	s, d := src.Addr().As16(), dst.Addr().As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	udp(b[ipLen:], src.Port(), dst.Port(), payload, pseudo(s[:], d[:], len(b)-ipLen))
	return b
}

// pseudo is the sum of the pseudo-header of a UDP checksum (RFC 768,
// RFC 8200 §8.1): the addresses, the protocol and the UDP length.
func pseudo(src, dst []byte, udpLen int) uint32 {
	return words(src) + words(dst) + unix.IPPROTO_UDP + uint32(udpLen)
}

// udp writes a UDP header and payload into b, with its checksum.
func udp(b []byte, sport, dport uint16, payload []byte, pseudoSum uint32) {
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
	copy(b[8:], payload)
	sum := pseudoSum + words(b)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff // zero means no checksum (RFC 768)
	}
	binary.BigEndian.PutUint16(b[6:], c)
}

// words sums b as big-endian 16-bit words, an odd last byte padded.
func words(b []byte) uint32 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}
