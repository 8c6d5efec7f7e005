package sipd

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Wire sends whole frames out of an interface (AF_PACKET). A refused
// request's answer goes back on the wire the request came in on, to the
// MAC it came from: on an SBC whose routing sends the caller's address
// elsewhere (asymmetric routes, one VRF a side) a routed answer would
// leave by another interface, from an address the caller never spoke to.
// A socket of protocol 0 receives nothing; it needs CAP_NET_RAW.
type Wire struct{ fd int }

// OpenWire opens the packet socket, in the calling thread's network
// namespace: the interface indexes it sends to are that namespace's.
func OpenWire() (*Wire, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, rawErr("packet", err)
	}
	return &Wire{fd: fd}, nil
}

// Close closes the socket.
func (w *Wire) Close() error { return unix.Close(w.fd) }

// SendReply sends payload from src to dst out of interface ifindex, as
// the answer to a request whose link-layer header was l2 (ReplyFrame).
func (w *Wire) SendReply(ifindex uint32, l2 []byte, src, dst netip.AddrPort, payload []byte) error {
	var ip []byte
	s, d := src.Addr().Unmap(), dst.Addr().Unmap()
	switch {
	case s.Is4() && d.Is4():
		ip = UDPv4(netip.AddrPortFrom(s, src.Port()), netip.AddrPortFrom(d, dst.Port()), payload)
		binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip[:20]))
	case s.Is6() && d.Is6():
		ip = UDPv6(src, dst, payload)
	default:
		return fmt.Errorf("send from %v to %v: not one address family", src, dst)
	}
	frame, err := ReplyFrame(l2, ip)
	if err != nil {
		return err
	}
	to := &unix.SockaddrLinklayer{Ifindex: int(ifindex), Halen: 6}
	copy(to.Addr[:], frame[:6])
	return unix.Sendto(w.fd, frame, 0, to)
}

// ReplyFrame is the frame of an answer carrying the IP datagram ip, to a
// request whose link-layer header was l2 (Ethernet, any VLAN tags, the
// EtherType): the two MAC addresses swapped, the tags kept, the
// EtherType the datagram's own.
func ReplyFrame(l2, ip []byte) ([]byte, error) {
	if len(l2) < 14 || (len(l2)-14)%4 != 0 {
		return nil, fmt.Errorf("a link-layer header of %d bytes is not Ethernet with whole VLAN tags", len(l2))
	}
	f := make([]byte, len(l2)+len(ip))
	copy(f[0:6], l2[6:12])
	copy(f[6:12], l2[0:6])
	copy(f[12:], l2[12:])
	etherType := uint16(0x0800)
	if len(ip) > 0 && ip[0]>>4 == 6 {
		etherType = 0x86dd
	}
	binary.BigEndian.PutUint16(f[len(l2)-2:], etherType)
	copy(f[len(l2):], ip)
	return f, nil
}

// ipv4Checksum is the checksum of an IPv4 header whose checksum field is
// 0 (RFC 791): a raw IP socket's kernel fills it in, a packet socket's
// does not.
func ipv4Checksum(h []byte) uint16 {
	sum := words(h)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
