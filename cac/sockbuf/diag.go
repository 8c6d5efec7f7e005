package sockbuf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel ABI that golang.org/x/sys/unix v0.50.0 does not export.
const (
	inetDiagSKMemInfo = 7    // INET_DIAG_SKMEMINFO, include/uapi/linux/inet_diag.h
	packetShowMemInfo = 0x10 // PACKET_SHOW_MEMINFO, include/uapi/linux/packet_diag.h
	packetDiagMemInfo = 6    // PACKET_DIAG_MEMINFO, include/uapi/linux/packet_diag.h

	sizeofInetDiagReqV2 = 56 // struct inet_diag_req_v2
	sizeofInetDiagMsg   = 72 // struct inet_diag_msg
	sizeofPacketDiagReq = 20 // struct packet_diag_req
	sizeofPacketDiagMsg = 16 // struct packet_diag_msg

	// NLA_TYPE_MASK: the top two bits of nla_type are flags, not the type.
	nlaTypeMask = ^uint16(unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
)

// diagTimeout bounds a dump so that a kernel that never answers cannot hang
// Check, and with it the admission decision, forever.
const diagTimeout = 5 * time.Second

// errDumpInterrupted: the kernel flagged the dump inconsistent
// (NLM_F_DUMP_INTR); the caller dumps again.
var errDumpInterrupted = errors.New("sock_diag dump interrupted")

// meminfo is what this package needs of the kernel's sk_meminfo array.
type meminfo struct {
	rmemAlloc, rcvbuf, drops uint32
}

// diagConn is one NETLINK_SOCK_DIAG socket. It stays bound to the network
// namespace it was created in, whichever thread uses it later.
type diagConn struct {
	fd     int
	portid uint32
	seq    uint32
	buf    []byte
}

func openDiag() (*diagConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("open NETLINK_SOCK_DIAG socket: %w", err)
	}
	c := &diagConn{fd: fd, buf: make([]byte, 64<<10)}
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

func (c *diagConn) setup() error {
	if err := unix.Bind(c.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind NETLINK_SOCK_DIAG socket: %w", err)
	}
	// The kernel picks the port id at bind; replies to us carry it, and
	// checking it costs nothing.
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		return fmt.Errorf("getsockname of NETLINK_SOCK_DIAG socket: %w", err)
	}
	nl, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		return fmt.Errorf("getsockname of NETLINK_SOCK_DIAG socket: unexpected %T", sa)
	}
	c.portid = nl.Pid
	tv := unix.NsecToTimeval(diagTimeout.Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, opt, &tv); err != nil {
			return fmt.Errorf("set timeout on NETLINK_SOCK_DIAG socket: %w", err)
		}
	}
	return nil
}

func (c *diagConn) close() error {
	if err := unix.Close(c.fd); err != nil {
		return fmt.Errorf("close NETLINK_SOCK_DIAG socket: %w", err)
	}
	return nil
}

// inetDiagReq asks for every UDP socket of family with its sk_meminfo. The
// port is left to the caller: one dump per family serves any number of
// watched ports.
func inetDiagReq(family uint8) []byte {
	req := make([]byte, sizeofInetDiagReqV2)
	req[0] = family
	req[1] = unix.IPPROTO_UDP
	req[2] = 1 << (inetDiagSKMemInfo - 1)
	// UDP sockets are TCP_CLOSE when only bound and TCP_ESTABLISHED when
	// connected; a daemon may use either.
	binary.NativeEndian.PutUint32(req[4:], ^uint32(0))
	return req
}

// packetDiagReq asks for every AF_PACKET socket with its sk_meminfo.
// packet_diag rejects a non-zero sdiag_protocol, so the protocol is
// filtered by the caller.
func packetDiagReq() []byte {
	req := make([]byte, sizeofPacketDiagReq)
	req[0] = unix.AF_PACKET
	binary.NativeEndian.PutUint32(req[8:], packetShowMemInfo)
	return req
}

// dump sends one SOCK_DIAG_BY_FAMILY dump request and hands the payload of
// each reply message to fn. It reads until NLMSG_DONE even after fn fails,
// so that no half-read dump is left in the socket.
func (c *diagConn) dump(req []byte, fn func(msg []byte) error) error {
	c.seq++
	seq := c.seq
	msg := make([]byte, unix.NLMSG_HDRLEN+len(req))
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	copy(msg[unix.NLMSG_HDRLEN:], req)
	if err := retryEINTR(func() error {
		return unix.Sendto(c.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}); err != nil {
		return fmt.Errorf("send sock_diag request: %w", err)
	}

	var fnErr error
	interrupted := false
	for {
		var n, flags int
		err := retryEINTR(func() (err error) {
			n, _, flags, _, err = unix.Recvmsg(c.fd, c.buf, nil, 0)
			return err
		})
		if errors.Is(err, unix.EAGAIN) {
			return fmt.Errorf("receive sock_diag reply: no answer within %v", diagTimeout)
		}
		if err != nil {
			return fmt.Errorf("receive sock_diag reply: %w", err)
		}
		if flags&unix.MSG_TRUNC != 0 {
			return fmt.Errorf("receive sock_diag reply: truncated to %d bytes", len(c.buf))
		}
		b := c.buf[:n]
		for len(b) > 0 {
			if len(b) < unix.NLMSG_HDRLEN {
				return fmt.Errorf("sock_diag reply: %d bytes left, less than a netlink header", len(b))
			}
			l := int(binary.NativeEndian.Uint32(b[0:]))
			typ := binary.NativeEndian.Uint16(b[4:])
			hflags := binary.NativeEndian.Uint16(b[6:])
			hseq := binary.NativeEndian.Uint32(b[8:])
			pid := binary.NativeEndian.Uint32(b[12:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return fmt.Errorf("sock_diag reply: message length %d with %d bytes left", l, len(b))
			}
			payload := b[unix.NLMSG_HDRLEN:l]
			b = b[min(align4(l), len(b)):]
			// What is left of an earlier dump that timed out or failed is
			// not an answer to this one.
			if hseq != seq || pid != c.portid {
				continue
			}
			if hflags&unix.NLM_F_DUMP_INTR != 0 {
				interrupted = true
			}
			switch typ {
			case unix.NLMSG_NOOP:
			case unix.NLMSG_ERROR:
				return fmt.Errorf("sock_diag request: %w", nlError(payload))
			case unix.NLMSG_DONE:
				// A dump that failed half way ends in NLMSG_DONE carrying
				// the negative errno.
				if len(payload) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(payload)); e < 0 {
						return fmt.Errorf("sock_diag dump: %w", syscall.Errno(-e))
					}
				}
				if fnErr != nil {
					return fnErr
				}
				if interrupted {
					return errDumpInterrupted
				}
				return nil
			case unix.SOCK_DIAG_BY_FAMILY:
				if fnErr == nil {
					fnErr = fn(payload)
				}
			default:
				return fmt.Errorf("sock_diag reply: unexpected message type %d", typ)
			}
		}
	}
}

func nlError(payload []byte) error {
	if len(payload) < 4 {
		return errors.New("truncated NLMSG_ERROR")
	}
	e := int32(binary.NativeEndian.Uint32(payload))
	if e >= 0 {
		return errors.New("unexpected acknowledgement")
	}
	return syscall.Errno(-e)
}

func retryEINTR(f func() error) error {
	// A socket with SO_RCVTIMEO is not restarted after a signal (signal(7)),
	// and the Go runtime sends them for preemption.
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func align4(n int) int {
	return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
}

// findMeminfo walks the rtattrs in b for the sk_meminfo attribute of type
// want. ok is false when the kernel left it out.
func findMeminfo(b []byte, want uint16) (m meminfo, ok bool, err error) {
	for len(b) > 0 {
		if len(b) < unix.SizeofRtAttr {
			return m, false, fmt.Errorf("%d bytes left, less than an attribute header", len(b))
		}
		l := int(binary.NativeEndian.Uint16(b[0:]))
		typ := binary.NativeEndian.Uint16(b[2:]) & nlaTypeMask
		if l < unix.SizeofRtAttr || l > len(b) {
			return m, false, fmt.Errorf("attribute length %d with %d bytes left", l, len(b))
		}
		val := b[unix.SizeofRtAttr:l]
		b = b[min(align4(l), len(b)):]
		if typ != want {
			continue
		}
		// Newer kernels may append fields to sk_meminfo; the ones read
		// here keep their index.
		if len(val) < 4*(unix.SK_MEMINFO_DROPS+1) {
			return m, false, fmt.Errorf("sk_meminfo of %d bytes, too short for SK_MEMINFO_DROPS", len(val))
		}
		return meminfo{
			rmemAlloc: binary.NativeEndian.Uint32(val[4*unix.SK_MEMINFO_RMEM_ALLOC:]),
			rcvbuf:    binary.NativeEndian.Uint32(val[4*unix.SK_MEMINFO_RCVBUF:]),
			drops:     binary.NativeEndian.Uint32(val[4*unix.SK_MEMINFO_DROPS:]),
		}, true, nil
	}
	return m, false, nil
}

// diagSocket is one socket as a dump reports it, before it is judged.
type diagSocket struct {
	kind     string
	family   uint8
	port     uint16
	protocol uint16
	inode    uint32
	cookie   uint64
	mem      meminfo
}

// parseInetDiag reads a struct inet_diag_msg and its attributes.
func parseInetDiag(msg []byte) (diagSocket, error) {
	if len(msg) < sizeofInetDiagMsg {
		return diagSocket{}, fmt.Errorf("inet_diag_msg of %d bytes, want %d", len(msg), sizeofInetDiagMsg)
	}
	s := diagSocket{
		kind:   "udp",
		family: msg[0],
		// idiag_sport is big-endian, like every port in inet_diag_sockid.
		port:   binary.BigEndian.Uint16(msg[4:]),
		cookie: cookie(msg[44:]),
		inode:  binary.NativeEndian.Uint32(msg[68:]),
	}
	mem, ok, err := findMeminfo(msg[sizeofInetDiagMsg:], inetDiagSKMemInfo)
	if err != nil {
		return s, fmt.Errorf("udp port %d inode %d: %w", s.port, s.inode, err)
	}
	if !ok {
		return s, fmt.Errorf("udp port %d inode %d: no INET_DIAG_SKMEMINFO in reply", s.port, s.inode)
	}
	s.mem = mem
	return s, nil
}

// parsePacketDiag reads a struct packet_diag_msg and its attributes.
func parsePacketDiag(msg []byte) (diagSocket, error) {
	if len(msg) < sizeofPacketDiagMsg {
		return diagSocket{}, fmt.Errorf("packet_diag_msg of %d bytes, want %d", len(msg), sizeofPacketDiagMsg)
	}
	s := diagSocket{
		kind:   "packet",
		family: msg[0],
		// packet_diag stores ntohs(po->num): unlike the socket(2)
		// argument, pdiag_num is already in host order.
		protocol: binary.NativeEndian.Uint16(msg[2:]),
		inode:    binary.NativeEndian.Uint32(msg[4:]),
		cookie:   cookie(msg[8:]),
	}
	mem, ok, err := findMeminfo(msg[sizeofPacketDiagMsg:], packetDiagMemInfo)
	if err != nil {
		return s, fmt.Errorf("packet protocol %#04x inode %d: %w", s.protocol, s.inode, err)
	}
	if !ok {
		return s, fmt.Errorf("packet protocol %#04x inode %d: no PACKET_DIAG_MEMINFO in reply", s.protocol, s.inode)
	}
	s.mem = mem
	return s, nil
}

// cookie reads the __u32[2] socket cookie that sock_diag_save_cookie
// writes low word first.
func cookie(b []byte) uint64 {
	return uint64(binary.NativeEndian.Uint32(b[0:])) | uint64(binary.NativeEndian.Uint32(b[4:]))<<32
}
