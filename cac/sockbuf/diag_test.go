package sockbuf

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// attr is one rtattr as the kernel lays it out, padded to 4 bytes.
func attr(typ uint16, val []byte) []byte {
	b := make([]byte, align4(unix.SizeofRtAttr+len(val)))
	binary.NativeEndian.PutUint16(b[0:], uint16(unix.SizeofRtAttr+len(val)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[unix.SizeofRtAttr:], val)
	return b
}

func skmeminfo(rmem, rcvbuf, drops uint32) []byte {
	v := make([]byte, 4*unix.SK_MEMINFO_VARS)
	binary.NativeEndian.PutUint32(v[4*unix.SK_MEMINFO_RMEM_ALLOC:], rmem)
	binary.NativeEndian.PutUint32(v[4*unix.SK_MEMINFO_RCVBUF:], rcvbuf)
	binary.NativeEndian.PutUint32(v[4*unix.SK_MEMINFO_DROPS:], drops)
	return v
}

func TestParseInetDiag(t *testing.T) {
	msg := make([]byte, sizeofInetDiagMsg)
	msg[0] = unix.AF_INET6
	binary.BigEndian.PutUint16(msg[4:], 5060)
	binary.NativeEndian.PutUint32(msg[44:], 0x11223344)
	binary.NativeEndian.PutUint32(msg[48:], 0x55667788)
	binary.NativeEndian.PutUint32(msg[68:], 4242)
	// An attribute of another type, with the nested flag, comes first.
	msg = append(msg, attr(unix.NLA_F_NESTED|1, []byte{1, 2, 3})...)
	msg = append(msg, attr(inetDiagSKMemInfo, skmeminfo(7500, 8192, 3))...)

	s, err := parseInetDiag(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := diagSocket{kind: "udp", family: unix.AF_INET6, port: 5060, inode: 4242,
		cookie: 0x5566778811223344, mem: meminfo{7500, 8192, 3}}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}

	if _, err := parseInetDiag(msg[:sizeofInetDiagMsg]); err == nil {
		t.Error("reply without INET_DIAG_SKMEMINFO: no error")
	}
	if _, err := parseInetDiag(msg[:len(msg)-2]); err == nil {
		t.Error("truncated attribute: no error")
	}
	short := append(msg[:sizeofInetDiagMsg:sizeofInetDiagMsg], attr(inetDiagSKMemInfo, make([]byte, 4*unix.SK_MEMINFO_DROPS))...)
	if _, err := parseInetDiag(short); err == nil {
		t.Error("sk_meminfo without SK_MEMINFO_DROPS: no error")
	}
}

func TestParsePacketDiag(t *testing.T) {
	msg := make([]byte, sizeofPacketDiagMsg)
	msg[0] = unix.AF_PACKET
	binary.NativeEndian.PutUint16(msg[2:], 0x8863) // host order, as the kernel puts it
	binary.NativeEndian.PutUint32(msg[4:], 99)
	msg = append(msg, attr(packetDiagMemInfo, skmeminfo(1, 2, 3))...)
	s, err := parsePacketDiag(msg)
	if err != nil {
		t.Fatal(err)
	}
	if s.kind != "packet" || s.protocol != 0x8863 || s.inode != 99 || s.mem != (meminfo{1, 2, 3}) {
		t.Fatalf("got %+v", s)
	}
	if _, err := parsePacketDiag(msg[:sizeofPacketDiagMsg-1]); err == nil {
		t.Error("short packet_diag_msg: no error")
	}
}

func TestQueueFull(t *testing.T) {
	for _, tc := range []struct {
		rmem, rcvbuf uint32
		want         bool
	}{
		{0, 8192, false},
		{7372, 8192, false},
		{7373, 8192, true}, // 7372.8 is 90 %
		{9000, 8192, true},
		{0, 0, false},
		{1 << 31, 1<<32 - 1, false}, // no overflow in the product
		{1<<32 - 1, 1<<32 - 1, true},
	} {
		if got := queueFull(tc.rmem, tc.rcvbuf); got != tc.want {
			t.Errorf("queueFull(%d, %d) = %v, want %v", tc.rmem, tc.rcvbuf, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	p := Pressure{Full: true, Sockets: []Socket{
		{Kind: "udp", Port: 1701, Inode: 1, RmemAlloc: 10, Rcvbuf: 212992},
		{Kind: "udp", Port: 5060, Inode: 1234, RmemAlloc: 202343, Rcvbuf: 212992, Full: true},
		{Kind: "packet", Protocol: 0x8863, Inode: 7, Rcvbuf: 212992, Drops: 17, DropsRose: true, Full: true},
	}}
	want := "udp 5060 inode 1234: 95% of 212992 bytes; packet 0x8863 inode 7: 0% of 212992 bytes, drops rose to 17"
	if got := p.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := (Pressure{Sockets: p.Sockets[:1]}).String(); got != "none" {
		t.Errorf("nothing full: got %q", got)
	}
}

func TestWatcherLifecycle(t *testing.T) {
	if _, err := NewWatcher(Watch{UDPPorts: []uint16{5060, 0}}); err == nil || !strings.Contains(err.Error(), "UDP port 0") {
		t.Errorf("port 0: got %v", err)
	}
	if _, err := NewWatcher(Watch{PacketProtocols: []uint16{0}}); err == nil {
		t.Error("protocol 0: no error")
	}
	// A sock_diag socket needs no privilege, and a Watcher with nothing to
	// watch asks the kernel nothing.
	w, err := NewWatcher(Watch{})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := w.Check(); err != nil || p.Full || len(p.Sockets) != 0 {
		t.Errorf("empty watch: got %s %+v, %v", p, p.Sockets, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := w.Check(); !errors.Is(err, ErrClosed) {
		t.Errorf("Check after Close: got %v, want ErrClosed", err)
	}
}
