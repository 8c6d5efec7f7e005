package listeners

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Kernel ABI: include/uapi/linux/inet_diag.h and include/net/tcp_states.h.
const (
	sizeofInetDiagReqV2 = 56 // struct inet_diag_req_v2
	sizeofInetDiagMsg   = 72 // struct inet_diag_msg
	tcpListen           = 10 // TCP_LISTEN; SCTP_SS_LISTENING is the same
	tcpClose            = 7  // TCP_CLOSE: a UDP socket that is not connected
)

// diagTimeout bounds a dump, so that a kernel that never answers cannot
// hang attach, status or the daemon's refresh.
const diagTimeout = 5 * time.Second

// dumpTries is how many times a dump the kernel flags inconsistent
// (sockets came or went while it ran) is asked again before giving up.
const dumpTries = 3

// sctpModule exists when the kernel has SCTP, built in or loaded.
const sctpModule = "/sys/module/sctp"

// query is one inet_diag dump: a protocol, a family and the states asked.
type query struct {
	transport Transport
	protocol  uint8
	family    uint8
	state     uint8 // the one state of a listener of this transport
}

// queries are the dumps List asks, SCTP only when the kernel has it.
func queries(sctp bool) []query {
	var q []query
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		q = append(q, query{UDP, unix.IPPROTO_UDP, fam, tcpClose}, query{TCP, unix.IPPROTO_TCP, fam, tcpListen})
		if sctp {
			q = append(q, query{SCTP, unix.IPPROTO_SCTP, fam, tcpListen})
		}
	}
	return q
}

// Serialize is struct inet_diag_req_v2 with no socket id: every socket
// of the protocol and family in the state asked (nl.NetlinkRequestData).
func (q query) Serialize() []byte {
	b := make([]byte, sizeofInetDiagReqV2)
	b[0], b[1] = q.family, q.protocol
	binary.NativeEndian.PutUint32(b[4:], 1<<q.state)
	return b
}

// Len is the size of the request (nl.NetlinkRequestData).
func (q query) Len() int { return sizeofInetDiagReqV2 }

// List finds the listeners of the named network namespace ("" this
// process's). It needs no privilege in its own namespace; entering
// another takes CAP_SYS_ADMIN.
func List(ns string) ([]Listener, error) {
	s, err := diagSocket(ns)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	tv := unix.NsecToTimeval(diagTimeout.Nanoseconds())
	if err := errors.Join(s.SetSendTimeout(&tv), s.SetReceiveTimeout(&tv)); err != nil {
		return nil, fmt.Errorf("sock_diag socket timeouts: %w", err)
	}
	_, err = os.Stat(sctpModule)
	var out []Listener
	for _, q := range queries(err == nil) {
		ls, err := dump(s, q)
		if err != nil {
			return nil, fmt.Errorf("list %s listeners (%s): %w", q.transport, familyName(q.family), err)
		}
		out = append(out, ls...)
	}
	return out, nil
}

// diagSocket opens a NETLINK_SOCK_DIAG socket in the named namespace:
// a netlink socket answers for the namespace it was made in, whichever
// thread uses it afterwards.
func diagSocket(ns string) (*nl.NetlinkSocket, error) {
	target := netns.None() // the current namespace
	if ns != "" {
		h, err := netns.GetFromName(ns)
		if err != nil {
			return nil, fmt.Errorf("network namespace %q: %w", ns, err)
		}
		defer h.Close()
		target = h
	}
	s, err := nl.GetNetlinkSocketAt(target, netns.None(), unix.NETLINK_SOCK_DIAG)
	if err != nil {
		if ns != "" {
			return nil, fmt.Errorf("open a sock_diag socket in network namespace %q: %w", ns, err)
		}
		return nil, fmt.Errorf("open a sock_diag socket: %w", err)
	}
	return s, nil
}

// dump asks one query on s, again while the kernel says the dump was
// interrupted.
func dump(s *nl.NetlinkSocket, q query) ([]Listener, error) {
	for try := 1; ; try++ {
		var out []Listener
		var perr error
		req := nl.NewNetlinkRequest(nl.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP)
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_SOCK_DIAG: {Socket: s}}
		req.AddData(q)
		err := req.ExecuteIter(unix.NETLINK_SOCK_DIAG, nl.SOCK_DIAG_BY_FAMILY, func(msg []byte) bool {
			l, ok, err := parse(msg, q)
			if err != nil {
				perr = err
				return false
			}
			if ok {
				out = append(out, l)
			}
			return true
		})
		switch {
		case perr != nil:
			return nil, perr
		case errors.Is(err, nl.ErrDumpInterrupted) && try < dumpTries:
			continue
		case q.transport == SCTP && errors.Is(err, unix.ENOENT):
			// SCTP without sctp_diag (CONFIG_INET_SCTP_DIAG off): its
			// listeners cannot be listed, and none is named.
			return nil, nil
		case err != nil:
			return nil, err
		}
		return out, nil
	}
}

// parse reads one struct inet_diag_msg: ok is false for a socket that
// is not a listener (an SCTP endpoint not in LISTEN: the kernel dumps
// every endpoint whatever state was asked).
func parse(msg []byte, q query) (l Listener, ok bool, err error) {
	if len(msg) < sizeofInetDiagMsg {
		return Listener{}, false, fmt.Errorf("inet_diag_msg of %d bytes, want %d", len(msg), sizeofInetDiagMsg)
	}
	family, state := msg[0], msg[1]
	if state != q.state {
		return Listener{}, false, nil
	}
	port := binary.BigEndian.Uint16(msg[4:6])
	var addr netip.Addr
	switch family {
	case unix.AF_INET:
		addr = netip.AddrFrom4([4]byte(msg[8:12]))
	case unix.AF_INET6:
		addr = netip.AddrFrom16([16]byte(msg[8:24]))
	default:
		return Listener{}, false, fmt.Errorf("inet_diag_msg of family %d", family)
	}
	return Listener{
		Transport: q.transport,
		Local:     netip.AddrPortFrom(addr, port),
		Inode:     binary.NativeEndian.Uint32(msg[68:72]),
	}, true, nil
}

func familyName(f uint8) string {
	if f == unix.AF_INET6 {
		return "IPv6"
	}
	return "IPv4"
}
