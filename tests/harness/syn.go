package harness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"golang.org/x/sys/unix"
)

// SYN is a TCP SYN from src:sport to dst:dport behind eth, with an MSS
// option and the checksums a kernel checks: a spoofed connection attempt
// a listener answers with a SYN-ACK.
func SYN(eth pkt.Ether, src, dst netip.AddrPort) []byte {
	tcp := binary.BigEndian.AppendUint16(nil, src.Port())
	tcp = binary.BigEndian.AppendUint16(tcp, dst.Port())
	tcp = binary.BigEndian.AppendUint32(tcp, 0x5eed0000|uint32(src.Port())) // sequence
	tcp = append(tcp, 0, 0, 0, 0)                                           // acknowledgment
	tcp = append(tcp, 6<<4, 0x02)                                           // 24 bytes of header, SYN
	tcp = binary.BigEndian.AppendUint16(tcp, 64240)                         // window
	tcp = append(tcp, 0, 0, 0, 0)                                           // checksum, urgent pointer
	tcp = append(tcp, 2, 4, 0x05, 0xb4)                                     // MSS 1460
	pseudo := append(src.Addr().AsSlice(), dst.Addr().AsSlice()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(tcp)))
	pseudo = append(pseudo, 0, 0, 0, 6)
	binary.BigEndian.PutUint16(tcp[16:], InetChecksum(pseudo, tcp))
	if src.Addr().Is6() {
		return pkt.Frame(eth, pkt.IPv6{Src: src.Addr(), Dst: dst.Addr(), Next: 6}, pkt.Raw(tcp))
	}
	return pkt.Frame(eth, pkt.IPv4{Src: src.Addr(), Dst: dst.Addr(), Proto: 6}, pkt.Raw(tcp))
}

// InetChecksum is the Internet checksum (RFC 1071) over parts in turn,
// each of an even length but the last: a pseudo-header and a segment.
func InetChecksum(parts ...[]byte) uint16 {
	var sum uint32
	for _, p := range parts {
		for i := 0; i < len(p); i += 2 {
			w := uint32(p[i]) << 8
			if i+1 < len(p) {
				w |= uint32(p[i+1])
			}
			sum += w
		}
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// SYNACKs counts the SYN-ACKs from a port that arrive on an interface:
// what a listener answered, seen from the side the SYNs came from.
type SYNACKs struct {
	mu       sync.Mutex
	total    int
	answered map[netip.AddrPort]bool // the SYNs' sources the SYN-ACKs went to
	stop     chan struct{}
	done     chan error
}

// CaptureSYNACKs counts, until the test ends or Stop, the SYN-ACKs from
// port that come in on iface in namespace ns, over IPv4 and IPv6.
func CaptureSYNACKs(t *testing.T, ns, iface string, port uint16) *SYNACKs {
	t.Helper()
	fd := -1
	err := loader.InNetns(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		ifr, err := unix.NewIfreq(iface)
		if err == nil {
			err = unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr)
		}
		if err != nil {
			return fmt.Errorf("index of %s: %w", iface, err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: int(ifr.Uint32())})
	})
	if err == nil {
		// the frames this side sends are not what it counts
		err = errors.Join(unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1),
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20),
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 50_000}))
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		t.Fatalf("capture on %s in %s: %v", iface, ns, err)
	}
	c := &SYNACKs{answered: map[netip.AddrPort]bool{}, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 2048)
		for {
			select {
			case <-c.stop:
				c.done <- nil
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			switch {
			case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				c.done <- fmt.Errorf("capture on %s: %w", iface, err)
				return
			}
			if to, ok := synACKFrom(buf[:n], port); ok {
				c.mu.Lock()
				c.total++
				c.answered[to] = true
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Stop ends the capture; it may be called again.
func (c *SYNACKs) Stop() error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	return <-c.done
}

// Counts is how many SYN-ACKs came, and to how many sources (address and
// port): a listener sends one again for a SYN it has not seen completed.
func (c *SYNACKs) Counts() (total int, answered map[netip.AddrPort]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	answered = make(map[netip.AddrPort]bool, len(c.answered))
	for a := range c.answered {
		answered[a] = true
	}
	return c.total, answered
}

// synACKFrom reports whether an untagged Ethernet frame is a TCP SYN-ACK
// from port, and to where it goes.
func synACKFrom(f []byte, port uint16) (netip.AddrPort, bool) {
	if len(f) < 14 {
		return netip.AddrPort{}, false
	}
	var tcp []byte
	var dst netip.Addr
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		ip := f[14:]
		if len(ip) < 20 || ip[9] != 6 {
			return netip.AddrPort{}, false
		}
		dst = netip.AddrFrom4([4]byte(ip[16:20]))
		tcp = ip[4*int(ip[0]&0x0f):]
	case 0x86dd:
		ip := f[14:]
		if len(ip) < 40 || ip[6] != 6 { // the kernel's SYN-ACK has no extension header
			return netip.AddrPort{}, false
		}
		dst = netip.AddrFrom16([16]byte(ip[24:40]))
		tcp = ip[40:]
	default:
		return netip.AddrPort{}, false
	}
	if len(tcp) < 14 || binary.BigEndian.Uint16(tcp) != port || tcp[13]&0x12 != 0x12 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(dst, binary.BigEndian.Uint16(tcp[2:])), true
}

// htons is a protocol number in network order, as packet sockets take it.
func htons(v uint16) uint16 { return v<<8 | v>>8 }
