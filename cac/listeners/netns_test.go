package listeners

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestListInNetns: in a network namespace of its own, with ports.sip
// [5060], a UDP listener on 5080 and a TCP one on 5060 are named, with
// this process as their owner; a UDP listener on 5060, one on loopback,
// a connected UDP socket and an established TCP connection are not. The
// addresses are documentation ones on the namespace's loopback: nothing
// of the root namespace is bound or read.
func TestListInNetns(t *testing.T) {
	testenv.RequireRoot(t, "create a network namespace")
	ns := testenv.Netns(t)
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", "192.0.2.1/32", "dev", "lo"},
		{"addr", "add", "2001:db8::1/128", "dev", "lo", "nodad"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
		}
	}

	var closers []func() error
	t.Cleanup(func() {
		for _, c := range closers {
			c()
		}
	})
	// Sockets made on a thread inside ns stay there.
	err := testenv.Do(ns, func() error {
		for _, a := range []string{"192.0.2.1:5080", "192.0.2.1:5060", "127.0.0.1:5061"} {
			c, err := net.ListenPacket("udp", a)
			if err != nil {
				return err
			}
			closers = append(closers, c.Close)
		}
		tl, err := net.Listen("tcp", "[2001:db8::1]:5060")
		if err != nil {
			return err
		}
		closers = append(closers, tl.Close)
		// A connected UDP socket and an established TCP connection on
		// SIP ports are no listeners.
		u, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 5062}, &net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 9})
		if err != nil {
			return err
		}
		closers = append(closers, u.Close)
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 5063}}
		tc, err := d.Dial("tcp", "[2001:db8::1]:5060")
		if err != nil {
			return err
		}
		closers = append(closers, tc.Close)
		return nil
	})
	if err != nil {
		t.Fatalf("sockets in %s: %v", ns, err)
	}

	ls, err := List(ns)
	if err != nil {
		t.Fatal(err)
	}
	got := Unwatched(ls, Watched{UDP: []uint16{5060}})
	var names []string
	for _, f := range got {
		names = append(names, f.String())
	}
	want := []string{"udp 192.0.2.1:5080", "tcp [2001:db8::1]:5060"}
	if !slices.Equal(names, want) {
		t.Fatalf("unwatched %v, want %v (all listeners: %v)", names, want, ls)
	}
	if !slices.ContainsFunc(ls, func(l Listener) bool { return l.String() == "udp 192.0.2.1:5060" }) {
		t.Errorf("the watched UDP listener on 5060 is not listed: %v", ls)
	}

	owners := Owners("/proc", []uint32{got[0].Inode, got[1].Inode})
	self, _ := os.ReadFile("/proc/self/comm")
	for _, f := range got {
		if o := owners[f.Inode]; o.PID != os.Getpid() || o.Process != strings.TrimSpace(string(self)) {
			t.Errorf("owner of %s: %+v, want pid %d", f, o, os.Getpid())
		}
	}

	// The root namespace's listeners are not the namespace's.
	if mine, err := List(""); err == nil {
		for _, l := range mine {
			if l.Inode == got[0].Inode || l.Inode == got[1].Inode {
				t.Errorf("%s of %s listed in this namespace", l, ns)
			}
		}
	}
	if _, err := List(ns + "-missing"); err == nil || !strings.Contains(err.Error(), ns+"-missing") {
		t.Errorf("a namespace that does not exist: %v", err)
	}
}
