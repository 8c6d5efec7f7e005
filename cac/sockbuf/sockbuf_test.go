package sockbuf

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// overflow is far more datagrams or frames than a doubled 4 KiB buffer holds.
const overflow = 200

func TestUDP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		family int
	}{{"IPv4", unix.AF_INET}, {"IPv6", unix.AF_INET6}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testUDP(t, tc.family)
		})
	}
}

func testUDP(t *testing.T, family int) {
	ns := newNetNS(t)
	rx, port, closeRx := openUDPCloser(t, ns, family)
	other, otherPort := openUDP(t, ns, family)
	tx, _ := openUDP(t, ns, family)
	w := openWatcher(t, ns, Watch{UDPPorts: []uint16{port, 5060}})
	control := openWatcher(t, ns, Watch{UDPPorts: []uint16{otherPort}})
	ino := inode(t, rx)
	named := fmt.Sprintf("udp %d inode %d: ", port, ino)

	p := check(t, w)
	s := only(t, p)
	if p.Full || s.Full || s.DropsRose || p.String() != "none" {
		t.Fatalf("idle socket: got %s %+v", p, s)
	}
	if s.Kind != "udp" || s.Port != port || s.Inode != ino || s.Rcvbuf != rcvbuf(t, rx) || s.RmemAlloc != 0 {
		t.Fatalf("idle socket: got %+v, want udp port %d inode %d rcvbuf %d, empty", s, port, ino, rcvbuf(t, rx))
	}

	// A socket on a port not watched overflows: the control watcher proves
	// it did, and the watcher under test must not care.
	sendUDP(t, ns, tx, family, otherPort, overflow)
	waitFor(t, control, "unwatched socket full", func(p Pressure) bool { return p.Full })
	p = check(t, w)
	if p.Full || len(p.Sockets) != 1 || p.Sockets[0].Port != port {
		t.Fatalf("unwatched port %d overflowing: got %s %+v", otherPort, p, p.Sockets)
	}
	drain(t, ns, other)

	// Fill one datagram at a time: the queue reaches 90 % before the kernel
	// drops anything.
	full := false
	for i := 0; i < overflow && !full; i++ {
		sendUDP(t, ns, tx, family, port, 1)
		p = check(t, w)
		full = p.Full
	}
	s = only(t, p)
	if !full || !s.Full || !queueFull(s.RmemAlloc, s.Rcvbuf) || !strings.Contains(p.String(), named) {
		t.Fatalf("filled socket: got %s %+v, want %q at >= 90%%", p, s, named)
	}
	t.Logf("full: %s", p)

	drain(t, ns, rx)
	p = waitFor(t, w, "drained socket not full", func(p Pressure) bool { return !p.Full })
	if s := only(t, p); s.RmemAlloc != 0 || s.Full {
		t.Fatalf("drained socket: got %+v", s)
	}

	// Overflow: the check that first sees the drops is Full on them.
	sendUDP(t, ns, tx, family, port, overflow)
	p = waitFor(t, w, "drops rise", func(p Pressure) bool { return only(t, p).DropsRose })
	if s := only(t, p); !p.Full || !s.Full || s.Drops == 0 || !strings.Contains(p.String(), named) {
		t.Fatalf("overflowing socket: got %s %+v", p, s)
	}
	t.Logf("overflow: %s", p)
	drain(t, ns, rx)
	waitFor(t, w, "drained socket not full", func(p Pressure) bool { return !p.Full })
	p = check(t, w)
	if s := only(t, p); p.Full || s.DropsRose || s.Drops == 0 {
		t.Fatalf("drained socket, no new drops: got %s %+v", p, s)
	}

	// Drops alone: a burst that overflowed and was read before the check
	// still counts.
	sendUDP(t, ns, tx, family, port, overflow)
	drain(t, ns, rx)
	p = waitFor(t, w, "drops rise after drain", func(p Pressure) bool { return only(t, p).DropsRose })
	if s := only(t, p); !p.Full || !s.Full || queueFull(s.RmemAlloc, s.Rcvbuf) {
		t.Fatalf("drained socket with new drops: got %s %+v", p, s)
	}
	if p := check(t, w); p.Full {
		t.Fatalf("no new drops since: got %s", p)
	}

	// The socket goes, and its drop baseline with it. The kernel frees a
	// closed UDP socket after an RCU grace period: until then the dump
	// may still list it.
	closeRx()
	p = waitFor(t, w, "closed socket gone", func(p Pressure) bool { return len(p.Sockets) == 0 })
	if p.Full || len(p.Sockets) != 0 || len(w.drops) != 0 {
		t.Fatalf("closed socket: got %s %+v, %d baselines", p, p.Sockets, len(w.drops))
	}
}

func TestPacket(t *testing.T) {
	t.Parallel()
	const pppoeDiscovery, pppoeSession = 0x8863, 0x8864
	ns := newNetNS(t)
	rx, lo := openPacket(t, ns, pppoeDiscovery)
	other, _ := openPacket(t, ns, pppoeSession)
	tx, _ := openPacket(t, ns, 0)
	w := openWatcher(t, ns, Watch{PacketProtocols: []uint16{pppoeDiscovery}})
	control := openWatcher(t, ns, Watch{PacketProtocols: []uint16{pppoeSession}})
	ino := inode(t, rx)
	named := fmt.Sprintf("packet 0x8863 inode %d: ", ino)

	p := check(t, w)
	s := only(t, p)
	if p.Full || s.Full || s.Kind != "packet" || s.Protocol != pppoeDiscovery || s.Inode != ino ||
		s.Rcvbuf != rcvbuf(t, rx) || s.RmemAlloc != 0 {
		t.Fatalf("idle socket: got %s %+v, want packet %#04x inode %d rcvbuf %d, empty",
			p, s, pppoeDiscovery, ino, rcvbuf(t, rx))
	}

	sendFrames(t, ns, tx, lo, pppoeSession, overflow)
	waitFor(t, control, "unwatched protocol full", func(p Pressure) bool { return p.Full })
	if p := check(t, w); p.Full || only(t, p).Protocol != pppoeDiscovery {
		t.Fatalf("unwatched protocol overflowing: got %s %+v", p, p.Sockets)
	}
	drain(t, ns, other)

	full := false
	for i := 0; i < overflow && !full; i++ {
		sendFrames(t, ns, tx, lo, pppoeDiscovery, 1)
		p = check(t, w)
		full = p.Full
	}
	s = only(t, p)
	if !full || !s.Full || !queueFull(s.RmemAlloc, s.Rcvbuf) || !strings.Contains(p.String(), named) {
		t.Fatalf("filled socket: got %s %+v, want %q at >= 90%%", p, s, named)
	}
	t.Logf("full: %s", p)

	drain(t, ns, rx)
	p = waitFor(t, w, "drained socket not full", func(p Pressure) bool { return !p.Full })
	if s := only(t, p); s.RmemAlloc != 0 {
		t.Fatalf("drained socket: got %+v", s)
	}

	sendFrames(t, ns, tx, lo, pppoeDiscovery, overflow)
	p = waitFor(t, w, "drops rise", func(p Pressure) bool { return only(t, p).DropsRose })
	if s := only(t, p); !p.Full || !s.Full || s.Drops == 0 {
		t.Fatalf("overflowing socket: got %s %+v", p, s)
	}
	t.Logf("overflow: %s", p)
	drain(t, ns, rx)
	waitFor(t, w, "drained socket not full", func(p Pressure) bool { return !p.Full })
	if p := check(t, w); p.Full || only(t, p).DropsRose {
		t.Fatalf("drained socket, no new drops: got %s %+v", p, p.Sockets)
	}
}

func TestNothingBound(t *testing.T) {
	t.Parallel()
	ns := newNetNS(t)
	// A socket on a port nobody watches is not one of ours.
	openUDP(t, ns, unix.AF_INET)
	w := openWatcher(t, ns, Watch{UDPPorts: []uint16{1701, 5060}, PacketProtocols: []uint16{0x8863}})
	for range 2 {
		p := check(t, w)
		if p.Full || len(p.Sockets) != 0 || p.String() != "none" {
			t.Fatalf("nothing bound: got %s %+v", p, p.Sockets)
		}
	}
}
