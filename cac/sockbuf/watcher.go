package sockbuf

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Watch names the sockets of the protected daemons.
type Watch struct {
	// UDPPorts are local UDP ports, IPv4 and IPv6 alike (1701 for xl2tpd,
	// 5060 for a SIP proxy).
	UDPPorts []uint16
	// PacketProtocols are the protocols, as ethertypes in host order, of
	// AF_PACKET sockets (0x8863 for the discovery socket of a PPPoE server).
	PacketProtocols []uint16
}

// Watcher reads the receive queues of the watched sockets. It may be used
// from any goroutine.
type Watcher struct {
	mu     sync.Mutex
	conn   *diagConn // nil once closed
	udp    map[uint16]bool
	packet map[uint16]bool
	// drops holds the drop counter of every watched socket at the last
	// successful Check. Keyed by socket cookie, not inode: cookies are never
	// reused, so a new socket cannot inherit the baseline of a closed one.
	drops map[dropKey]uint32
}

type dropKey struct {
	family uint8
	cookie uint64
}

// ErrClosed is returned by Check after Close.
var ErrClosed = errors.New("sockbuf: watcher closed")

// NewWatcher opens the sock_diag socket in the network namespace of the
// calling thread: a netlink socket stays bound to the namespace it was
// created in, so a caller may create the Watcher inside another namespace
// (with the goroutine locked to its thread) and use it from any goroutine
// afterwards.
func NewWatcher(w Watch) (*Watcher, error) {
	udp, err := set(w.UDPPorts, "UDP port")
	if err != nil {
		return nil, fmt.Errorf("sockbuf: %w", err)
	}
	packet, err := set(w.PacketProtocols, "packet protocol")
	if err != nil {
		return nil, fmt.Errorf("sockbuf: %w", err)
	}
	conn, err := openDiag()
	if err != nil {
		return nil, fmt.Errorf("sockbuf: %w", err)
	}
	return &Watcher{conn: conn, udp: udp, packet: packet}, nil
}

func set(values []uint16, what string) (map[uint16]bool, error) {
	m := make(map[uint16]bool, len(values))
	for _, v := range values {
		// Port 0 is no port a daemon listens on, and protocol 0 is a packet
		// socket that receives nothing: either is a configuration mistake.
		if v == 0 {
			return nil, fmt.Errorf("%s 0 in watch list", what)
		}
		m[v] = true
	}
	return m, nil
}

// Close releases the sock_diag socket. Calling it again does nothing.
func (w *Watcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return nil
	}
	err := w.conn.close()
	w.conn = nil
	if err != nil {
		return fmt.Errorf("sockbuf: %w", err)
	}
	return nil
}

// Check reads every watched socket once. The first time a Check sees a
// socket it only records the socket's drop counter: drops from before the
// Watcher knew the socket are not a rise. A failed Check leaves the
// baselines as they were.
func (w *Watcher) Check() (Pressure, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return Pressure{}, ErrClosed
	}
	found, err := w.read()
	if err != nil {
		return Pressure{}, fmt.Errorf("sockbuf: %w", err)
	}

	var p Pressure
	drops := make(map[dropKey]uint32, len(found))
	for _, d := range found {
		key := dropKey{d.family, d.cookie}
		prev, known := w.drops[key]
		s := Socket{
			Kind:      d.kind,
			Port:      d.port,
			Protocol:  d.protocol,
			Inode:     d.inode,
			RmemAlloc: d.mem.rmemAlloc,
			Rcvbuf:    d.mem.rcvbuf,
			Drops:     d.mem.drops,
			// sk_drops only ever counts up, so any change is a rise, even
			// one that wrapped around.
			DropsRose: known && d.mem.drops != prev,
		}
		s.Full = s.DropsRose || queueFull(s.RmemAlloc, s.Rcvbuf)
		p.Full = p.Full || s.Full
		p.Sockets = append(p.Sockets, s)
		drops[key] = d.mem.drops
	}
	// Sockets not seen this time are gone: their baselines go with them.
	w.drops = drops
	sortSockets(p.Sockets)
	return p, nil
}

// queueFull is rmem_alloc ≥ 90 % of rcvbuf, in integers wide enough not to
// overflow.
func queueFull(rmemAlloc, rcvbuf uint32) bool {
	return rcvbuf > 0 && uint64(rmemAlloc)*10 >= uint64(rcvbuf)*9
}

// read dumps the families that have something watched and keeps the watched
// sockets.
func (w *Watcher) read() ([]diagSocket, error) {
	var found []diagSocket
	if len(w.udp) > 0 {
		for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
			err := w.dumpRetry(inetDiagReq(family), func(msg []byte) error {
				s, err := parseInetDiag(msg)
				if err != nil {
					return err
				}
				if w.udp[s.port] {
					found = append(found, s)
				}
				return nil
			}, func() { found = dropFamily(found, family) })
			if err != nil {
				return nil, fmt.Errorf("inet_diag dump of %s UDP sockets: %w", familyName(family), err)
			}
		}
	}
	if len(w.packet) > 0 {
		err := w.dumpRetry(packetDiagReq(), func(msg []byte) error {
			s, err := parsePacketDiag(msg)
			if err != nil {
				return err
			}
			if w.packet[s.protocol] {
				found = append(found, s)
			}
			return nil
		}, func() { found = dropFamily(found, unix.AF_PACKET) })
		if err != nil {
			return nil, fmt.Errorf("packet_diag dump of AF_PACKET sockets: %w", err)
		}
	}
	return found, nil
}

// dumpRetry runs a dump again when the kernel flagged it inconsistent,
// after reset has thrown away what the spoilt one collected.
func (w *Watcher) dumpRetry(req []byte, fn func([]byte) error, reset func()) error {
	const attempts = 3
	var err error
	for range attempts {
		err = w.conn.dump(req, fn)
		if !errors.Is(err, errDumpInterrupted) {
			return err
		}
		reset()
	}
	return fmt.Errorf("%w %d times in a row", err, attempts)
}

func dropFamily(found []diagSocket, family uint8) []diagSocket {
	kept := found[:0]
	for _, s := range found {
		if s.family != family {
			kept = append(kept, s)
		}
	}
	return kept
}

func familyName(family uint8) string {
	if family == unix.AF_INET6 {
		return "IPv6"
	}
	return "IPv4"
}
