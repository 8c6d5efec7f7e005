package sockbuf

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// requireRoot skips t without root, or fails it when XDPCAC_REQUIRE_BPF=1:
// there a skipped kernel test is a test that did not run.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	const reason = "needs root to create network namespaces and AF_PACKET sockets"
	if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
		t.Fatalf("XDPCAC_REQUIRE_BPF=1 but this test cannot run: %s", reason)
	}
	t.Skip(reason)
}

// netNS is a network namespace of one test and a goroutine whose thread
// lives in it; do runs socket work there. The host's sockets are only ever
// read, never created or written to.
type netNS struct {
	name string
	jobs chan func()
}

func newNetNS(t *testing.T) *netNS {
	t.Helper()
	requireRoot(t)
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	n := &netNS{name: "xcsb" + hex.EncodeToString(b), jobs: make(chan func())}
	ip(t, "netns", "add", n.name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.name, err, out)
		}
	})
	ip(t, "-n", n.name, "link", "set", "lo", "up")

	ready := make(chan error, 1)
	done := make(chan struct{})
	go n.serve(ready, done)
	if err := <-ready; err != nil {
		<-done
		t.Fatalf("enter netns %s: %v", n.name, err)
	}
	// Registered after the deletion, so it runs before it.
	t.Cleanup(func() {
		close(n.jobs)
		<-done
	})
	return n
}

func (n *netNS) serve(ready chan<- error, done chan<- struct{}) {
	defer close(done)
	// Never unlocked: when the goroutine returns, the thread, still in the
	// test's namespace, is destroyed instead of going back to the pool.
	runtime.LockOSThread()
	h, err := netns.GetFromName(n.name)
	if err != nil {
		ready <- err
		return
	}
	err = netns.Set(h)
	h.Close()
	ready <- err
	if err != nil {
		return
	}
	for job := range n.jobs {
		job()
	}
}

// do runs fn on the namespace's thread and fails t with its error.
func (n *netNS) do(t *testing.T, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	n.jobs <- func() { errc <- fn() }
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// closeOnCleanup closes fd when t ends; the test owns every fd it makes.
// The returned func closes it earlier, and then the cleanup does not close
// the number again: parallel tests may have been given it meanwhile.
func closeOnCleanup(t *testing.T, fd int) (closeNow func()) {
	closed := false
	closeNow = func() {
		if closed {
			return
		}
		closed = true
		if err := unix.Close(fd); err != nil {
			t.Errorf("close fd %d: %v", fd, err)
		}
	}
	t.Cleanup(closeNow)
	return closeNow
}

// smallRcvbuf is what the tests ask for; the kernel doubles it, and a
// buffer that small fills after a handful of datagrams.
const smallRcvbuf = 4096

func loopback(family int, port uint16) unix.Sockaddr {
	if family == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: int(port), Addr: [16]byte(net.IPv6loopback)}
	}
	return &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}
}

// openUDP binds a UDP socket with a small receive buffer to an ephemeral
// port on loopback in n.
func openUDP(t *testing.T, n *netNS, family int) (fd int, port uint16) {
	t.Helper()
	fd, port, _ = openUDPCloser(t, n, family)
	return fd, port
}

func openUDPCloser(t *testing.T, n *netNS, family int) (fd int, port uint16, closeNow func()) {
	t.Helper()
	n.do(t, func() (err error) {
		fd, err = unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("udp socket: %w", err)
		}
		defer func() {
			if err != nil {
				unix.Close(fd)
			}
		}()
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, smallRcvbuf); err != nil {
			return fmt.Errorf("SO_RCVBUF: %w", err)
		}
		if err := unix.Bind(fd, loopback(family, 0)); err != nil {
			return fmt.Errorf("udp bind: %w", err)
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			return fmt.Errorf("udp getsockname: %w", err)
		}
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			port = uint16(a.Port)
		case *unix.SockaddrInet6:
			port = uint16(a.Port)
		default:
			return fmt.Errorf("udp getsockname: %T", sa)
		}
		return nil
	})
	return fd, port, closeOnCleanup(t, fd)
}

func sendUDP(t *testing.T, n *netNS, fd, family int, port uint16, count int) {
	t.Helper()
	n.do(t, func() error {
		payload := make([]byte, 64)
		for range count {
			if err := unix.Sendto(fd, payload, 0, loopback(family, port)); err != nil {
				return fmt.Errorf("udp send to port %d: %w", port, err)
			}
		}
		return nil
	})
}

// htons turns a protocol number into the network order AF_PACKET wants.
func htons(v uint16) uint16 {
	return binary.NativeEndian.Uint16(binary.BigEndian.AppendUint16(nil, v))
}

// openPacket opens an AF_PACKET socket on lo in n: protocol 0 makes a
// socket that only sends; any other receives that ethertype with a small
// buffer.
func openPacket(t *testing.T, n *netNS, protocol uint16) (fd, ifindex int) {
	t.Helper()
	n.do(t, func() (err error) {
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		ifindex = lo.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(protocol)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer func() {
			if err != nil {
				unix.Close(fd)
			}
		}()
		if protocol == 0 {
			return nil
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, smallRcvbuf); err != nil {
			return fmt.Errorf("SO_RCVBUF: %w", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(protocol), Ifindex: ifindex}); err != nil {
			return fmt.Errorf("packet bind: %w", err)
		}
		return nil
	})
	closeOnCleanup(t, fd)
	return fd, ifindex
}

// sendFrames puts count Ethernet frames of the ethertype onto lo, which
// delivers them back to the packet sockets of that protocol.
func sendFrames(t *testing.T, n *netNS, fd, ifindex int, protocol uint16, count int) {
	t.Helper()
	n.do(t, func() error {
		f := make([]byte, 60)
		copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01}) // locally administered
		binary.BigEndian.PutUint16(f[12:], protocol)
		f[14], f[15] = 0x11, 0x09 // PPPoE version 1 type 1, PADI
		to := &unix.SockaddrLinklayer{Protocol: htons(protocol), Ifindex: ifindex}
		for range count {
			if err := unix.Sendto(fd, f, 0, to); err != nil {
				return fmt.Errorf("send frame on lo: %w", err)
			}
		}
		return nil
	})
}

// drain reads fd until nothing is left.
func drain(t *testing.T, n *netNS, fd int) {
	t.Helper()
	n.do(t, func() error {
		buf := make([]byte, 2048)
		for {
			_, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
			switch {
			case errors.Is(err, unix.EAGAIN):
				return nil
			case errors.Is(err, unix.EINTR):
			case err != nil:
				return fmt.Errorf("drain: %w", err)
			}
		}
	})
}

func inode(t *testing.T, fd int) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return uint32(st.Ino)
}

func rcvbuf(t *testing.T, fd int) uint32 {
	t.Helper()
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

// openWatcher creates the Watcher on n's thread, so that it reads n's
// sockets from whichever goroutine calls Check.
func openWatcher(t *testing.T, n *netNS, w Watch) *Watcher {
	t.Helper()
	var watcher *Watcher
	n.do(t, func() (err error) {
		watcher, err = NewWatcher(w)
		return err
	})
	t.Cleanup(func() {
		if err := watcher.Close(); err != nil {
			t.Errorf("close watcher: %v", err)
		}
	})
	return watcher
}

func check(t *testing.T, w *Watcher) Pressure {
	t.Helper()
	p, err := w.Check()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor checks until cond holds: loopback usually delivers before send
// returns, but may leave it to ksoftirqd under load.
func waitFor(t *testing.T, w *Watcher, what string, cond func(Pressure) bool) Pressure {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := check(t, w)
		if cond(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s; last check: %s; sockets %+v", what, p, p.Sockets)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// only returns the one socket p holds, failing t otherwise.
func only(t *testing.T, p Pressure) Socket {
	t.Helper()
	if len(p.Sockets) != 1 {
		t.Fatalf("want exactly one watched socket, got %+v", p.Sockets)
	}
	return p.Sockets[0]
}
