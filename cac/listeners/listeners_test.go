package listeners

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func l(t Transport, addr string) Listener {
	return Listener{Transport: t, Local: netip.MustParseAddrPort(addr)}
}

// TestUnwatched: which listeners are named with ports.sip [5060], and why.
func TestUnwatched(t *testing.T) {
	ls := []Listener{
		l(UDP, "0.0.0.0:5060"),       // watched
		l(UDP, "[::]:5060"),          // watched
		l(UDP, "192.0.2.1:5080"),     // SIP port, not in ports.sip
		l(TCP, "[::]:5060"),          // SIP over TCP on a port of ports.sip-tcp: watched
		l(TCP, "[::]:5062"),          // SIP over TCP on another SIP port
		l(TCP, "[::]:5062"),          // a second socket of the same (SO_REUSEPORT): one finding
		l(SCTP, "192.0.2.1:5061"),    // SCTP
		l(TCP, "127.0.0.1:5062"),     // loopback: out of the wire's reach
		l(UDP, "[::1]:5069"),         // loopback
		l(UDP, "0.0.0.0:53"),         // not SIP
		l(TCP, "0.0.0.0:443"),        // WebSocket perhaps, a web server as likely: not named
		l(UDP, "192.0.2.1:5070"),     // not a well-known SIP port, not in ports.sip
		l(UDP, "[2001:db8::1]:5081"), // alternate
	}
	got := Unwatched(ls, Watched{UDP: []uint16{5060}, TCP: []uint16{5060, 5061}})
	var names []string
	for _, f := range got {
		names = append(names, f.String()+": "+f.Reason)
	}
	want := []string{
		"udp 192.0.2.1:5080: port 5080 is not in ports.sip [5060]",
		"udp [2001:db8::1]:5081: port 5081 is not in ports.sip [5060]",
		"tcp [::]:5062: port 5062 is not in ports.sip-tcp [5060 5061]",
		"sctp 192.0.2.1:5061: the filter admits SIP over UDP and TCP only, not over sctp",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	if c := Count(got); !reflect.DeepEqual(c, map[Transport]int{UDP: 2, TCP: 1, SCTP: 1}) {
		t.Errorf("Count: %v", c)
	}
	if c := Count(nil); !reflect.DeepEqual(c, map[Transport]int{UDP: 0, TCP: 0, SCTP: 0}) {
		t.Errorf("Count of none: %v", c)
	}
}

// TestUnwatchedConfiguredPort: a port of ports.sip that is no well-known
// SIP port makes its TCP listener a SIP listener, and its UDP one watched;
// one of ports.sip-tcp makes its TCP listener watched.
func TestUnwatchedConfiguredPort(t *testing.T) {
	got := Unwatched([]Listener{l(UDP, "0.0.0.0:15060"), l(TCP, "0.0.0.0:15060"), l(UDP, "0.0.0.0:5060")}, Watched{UDP: []uint16{15060}})
	if len(got) != 2 || got[0].String() != "udp 0.0.0.0:5060" || got[1].String() != "tcp 0.0.0.0:15060" {
		t.Errorf("got %v", got)
	}
	if got[0].Reason != "port 5060 is not in ports.sip [15060]" {
		t.Errorf("reason %q", got[0].Reason)
	}
	if got := Unwatched([]Listener{l(TCP, "0.0.0.0:15061")}, Watched{TCP: []uint16{15061}}); len(got) != 0 {
		t.Errorf("a TCP listener on a port of ports.sip-tcp: %v", got)
	}
	if got := Unwatched([]Listener{l(UDP, "0.0.0.0:5060")}, Watched{}); len(got) != 1 || got[0].Reason != "port 5060 is not in ports.sip []" {
		t.Errorf("without ports.sip: %v", got)
	}
}

// TestParse: struct inet_diag_msg as the kernel lays it out.
func TestParse(t *testing.T) {
	msg := make([]byte, sizeofInetDiagMsg+8) // attributes follow, ignored
	msg[0], msg[1] = unix.AF_INET6, tcpListen
	binary.BigEndian.PutUint16(msg[4:], 5060)
	copy(msg[8:], netip.MustParseAddr("2001:db8::7").AsSlice())
	binary.NativeEndian.PutUint32(msg[68:], 4242)
	q := query{TCP, unix.IPPROTO_TCP, unix.AF_INET6, tcpListen}
	got, ok, err := parse(msg, q)
	if err != nil || !ok {
		t.Fatalf("parse: %v %v", ok, err)
	}
	if want := (Listener{TCP, netip.MustParseAddrPort("[2001:db8::7]:5060"), 4242}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}

	msg[0] = unix.AF_INET
	copy(msg[8:], []byte{192, 0, 2, 9})
	if got, _, _ := parse(msg, q); got.Local != netip.MustParseAddrPort("192.0.2.9:5060") {
		t.Errorf("IPv4: got %v", got.Local)
	}
	msg[1] = tcpClose // an SCTP endpoint not listening: skipped
	if _, ok, err := parse(msg, q); ok || err != nil {
		t.Errorf("not in LISTEN: ok %v, err %v", ok, err)
	}
	if _, _, err := parse(msg[:sizeofInetDiagMsg-1], q); err == nil {
		t.Error("short inet_diag_msg: no error")
	}
	msg[0], msg[1] = unix.AF_UNIX, tcpListen
	if _, _, err := parse(msg, q); err == nil {
		t.Error("family AF_UNIX: no error")
	}
}

// TestQuery: the request asks one state of one protocol and family.
func TestQuery(t *testing.T) {
	b := query{UDP, unix.IPPROTO_UDP, unix.AF_INET, tcpClose}.Serialize()
	if len(b) != sizeofInetDiagReqV2 || b[0] != unix.AF_INET || b[1] != unix.IPPROTO_UDP ||
		binary.NativeEndian.Uint32(b[4:]) != 1<<7 {
		t.Errorf("request % x", b)
	}
	if n := len(queries(false)); n != 4 {
		t.Errorf("%d queries without SCTP, want 4", n)
	}
	if n := len(queries(true)); n != 6 {
		t.Errorf("%d queries with SCTP, want 6", n)
	}
}

// TestOwners: a socket's owner is the first process with a descriptor
// of it, in a /proc made for the test.
func TestOwners(t *testing.T) {
	proc := t.TempDir()
	mk := func(pid, name string, fds map[string]string) {
		os.MkdirAll(filepath.Join(proc, pid, "fd"), 0o755)
		os.WriteFile(filepath.Join(proc, pid, "comm"), []byte(name+"\n"), 0o644)
		for fd, target := range fds {
			if err := os.Symlink(target, filepath.Join(proc, pid, "fd", fd)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("100", "kamailio", map[string]string{"0": "/dev/null", "5": "socket:[777]"})
	mk("101", "kamailio", map[string]string{"5": "socket:[777]"})
	mk("200", "sipp", map[string]string{"3": "socket:[888]", "4": "pipe:[1]"})
	os.MkdirAll(filepath.Join(proc, "sys"), 0o755) // not a process
	got := Owners(proc, []uint32{777, 888, 999})
	want := map[uint32]Owner{777: {100, "kamailio"}, 888: {200, "sipp"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := Owners(proc, nil); len(got) != 0 {
		t.Errorf("no inodes: %v", got)
	}
}
