package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ip runs the ip command and fails t with its output on error.
func ip(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Netns creates a named network namespace that is removed when t ends.
func Netns(t testing.TB) string {
	t.Helper()
	name := Unique("xcac")
	ip(t, "netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	return name
}

// Veth creates a veth pair with one end in each namespace, both up, and
// returns their names. Deleting the namespaces removes the pair.
func Veth(t testing.TB, nsA, nsB string) (a, b string) {
	t.Helper()
	return VethNamed(t, nsA, nsB, Unique("xca"), Unique("xcb"))
}

// VethNamed is Veth with names of the caller's choosing.
func VethNamed(t testing.TB, nsA, nsB, a, b string) (string, string) {
	t.Helper()
	ip(t, "link", "add", a, "netns", nsA, "type", "veth", "peer", "name", b, "netns", nsB)
	ip(t, "-n", nsA, "link", "set", a, "up")
	ip(t, "-n", nsB, "link", "set", b, "up")
	return a, b
}

// Do runs fn on a thread inside the named network namespace.
func Do(ns string, fn func() error) error {
	target, err := netns.GetFromName(ns)
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(target); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Send writes raw Ethernet frames to an interface in a namespace through
// an AF_PACKET socket, as a peer on the wire would.
func Send(t testing.TB, ns, iface string, frames [][]byte) {
	t.Helper()
	err := Do(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		ifi, err := InterfaceIndex(iface)
		if err != nil {
			return err
		}
		addr := &unix.SockaddrLinklayer{Ifindex: ifi, Halen: 6}
		for i, f := range frames {
			if err := unix.Sendto(fd, f, 0, addr); err != nil {
				return fmt.Errorf("send frame %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// InterfaceIndex is the index of an interface of the calling thread's
// namespace (inside Do).
func InterfaceIndex(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("index of %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

// KillNetnsProcesses kills every process left in a namespace: what a
// daemon under test started (pppoe-server's pppd, say) and a kill of the
// daemon did not take along.
func KillNetnsProcesses(ns string) {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// NetnsFile writes /etc/netns/NS/NAME, the file `ip netns exec NS` binds
// over /etc/NAME (resolv.conf, say), and removes it when t ends, with
// /etc/netns itself if it did not exist before and is empty then.
func NetnsFile(t testing.TB, ns, name, body string) {
	t.Helper()
	_, statErr := os.Stat("/etc/netns")
	dir := filepath.Join("/etc/netns", ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("netns file: %v", err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		if errors.Is(statErr, fs.ErrNotExist) {
			os.Remove("/etc/netns") // fails, as it should, if another test's files are there
		}
	})
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatalf("netns file: %v", err)
	}
}

// HardwareAddr returns the MAC address of an interface in a namespace, for
// frames that must reach its stack rather than be dropped as another
// host's.
func HardwareAddr(t testing.TB, ns, iface string) [6]byte {
	t.Helper()
	var mac [6]byte
	err := Do(ns, func() error {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		if len(ifi.HardwareAddr) != 6 {
			return fmt.Errorf("%s has no Ethernet address: %v", iface, ifi.HardwareAddr)
		}
		copy(mac[:], ifi.HardwareAddr)
		return nil
	})
	if err != nil {
		t.Fatalf("address of %s in %s: %v", iface, ns, err)
	}
	return mac
}

// Command is program name with args to run inside network namespace ns
// (ip netns exec, which also gives it mounts of its own there). Do is the
// way for Go code; Command, for other programs.
func Command(ns, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// CommandContext is Command, killed once ctx is done.
func CommandContext(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Run runs name with args in namespace ns and returns its output; when it
// fails, it fails t with that output.
func Run(t testing.TB, ns, name string, args ...string) string {
	t.Helper()
	out, err := Command(ns, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: %s %s: %v: %s", ns, name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
