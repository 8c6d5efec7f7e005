package fastpath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// L2TP message types besides those of internal/pkt.
const (
	msgSCCCN   = 3
	msgStopCCN = 4
	msgICCN    = 12
	msgHello   = 6
)

// tunnelEnds builds the frames of one tunnel between a LAC in front of the
// filter and the LNS behind it, with valid UDP checksums, so that the
// translation's checksum updates are checked too.
type tunnelEnds struct {
	v6           bool
	ver          uint8
	lacID, lnsID uint32
	lacPort      uint16
	lac, lns     netip.Addr
}

func newTunnel(v6 bool, ver uint8, lacID, lnsID uint32) tunnelEnds {
	e := tunnelEnds{v6: v6, ver: ver, lacID: lacID, lnsID: lnsID, lacPort: 1701,
		lac: netip.MustParseAddr("198.51.100.20"), lns: netip.MustParseAddr("192.0.2.10")}
	if v6 {
		e.lac, e.lns = netip.MustParseAddr("2001:db8::20"), netip.MustParseAddr("2001:db8::10")
	}
	return e
}

// frame is a datagram from src:sport to dst:1701 or back.
func (e tunnelEnds) frame(fromLAC bool, payload Layer) []byte {
	src, dst, sport, dport := e.lac, e.lns, e.lacPort, uint16(1701)
	if !fromLAC {
		src, dst, sport, dport = e.lns, e.lac, 1701, e.lacPort
	}
	var ip Layer = IPv4{Src: src, Dst: dst}
	if e.v6 {
		ip = IPv6{Src: src, Dst: dst}
	}
	return withUDPChecksum(Frame(Ether{}, ip, UDP{Src: sport, Dst: dport}, payload))
}

// fromLAC is a control message of type typ from the LAC (0: a ZLB).
func (e tunnelEnds) fromLAC(typ, ns, nr uint16) []byte {
	if typ == 0 {
		return e.frame(true, ZLBOf(uint16(e.ver), e.lnsID, ns, nr))
	}
	return e.frame(true, L2TP{Version: e.ver, MsgType: typ, ID: e.lnsID, Ns: ns, Nr: nr})
}

// fromLNS is a control message of type typ from the LNS (0: a ZLB); an
// SCCRP carries the LNS's assigned ID.
func (e tunnelEnds) fromLNS(typ, ns, nr uint16) []byte {
	if typ == 0 {
		return e.frame(false, ZLBOf(uint16(e.ver), e.lacID, ns, nr))
	}
	l := L2TP{Version: e.ver, MsgType: typ, ID: e.lacID, Ns: ns, Nr: nr}
	if typ == SCCRP {
		l.AssignedID = e.lnsID
	}
	return e.frame(false, l)
}

// hiddenSCCRP is an SCCRP whose Assigned Tunnel ID is hidden (encrypted
// with the tunnel secret): nothing the filter can read.
func hiddenSCCRP(e tunnelEnds) Layer {
	return L2TP{Version: e.ver, MsgType: SCCRP, ID: e.lacID, Nr: 1, AssignedID: e.lnsID, HiddenID: true}
}

// mustSend sends a frame out through the egress program and the model,
// which must agree, and returns it as it goes out.
func mustSend(t *testing.T, eg *egress, f *harness.FastPath, frame []byte) []byte {
	t.Helper()
	out, err := eg.sendOut(f, frame)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mapCount is the number of entries in a hash map.
func mapCount(t *testing.T, m *ebpf.Map) int {
	t.Helper()
	n := 0
	var k bpf.XdpCacL2tpKey
	var v bpf.XdpCacL2tpTunnel
	it := m.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// udpSum is the UDP checksum a frame's datagram should carry.
func udpSum(frame []byte) (uint16, classify.L2TPAt) {
	at, ok := classify.FindL2TP(frame, classify.NewPorts(harness.TestL2TPPorts, nil), false)
	if !ok {
		at, _ = classify.FindL2TP(frame, classify.NewPorts(harness.TestL2TPPorts, nil), true)
	}
	ip := frame[at.L3:]
	udpLen := int(binary.BigEndian.Uint16(frame[at.L4+4:]))
	sum := uint32(17) + uint32(udpLen)
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	if at.Family == 4 {
		add(ip[12:20])
	} else {
		add(ip[8:40])
	}
	u := append([]byte(nil), frame[at.L4:at.L4+udpLen]...)
	u[6], u[7] = 0, 0
	add(u)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	return c, at
}

// withUDPChecksum sets the UDP checksum of an L2TP frame.
func withUDPChecksum(frame []byte) []byte {
	c, at := udpSum(frame)
	binary.BigEndian.PutUint16(frame[at.L4+6:], c)
	return frame
}

// checkSums fails t unless frame's IPv4 header and UDP checksums hold.
func checkSums(t *testing.T, what string, frame []byte) {
	t.Helper()
	want, at := udpSum(frame)
	if got := binary.BigEndian.Uint16(frame[at.L4+6:]); got != want {
		t.Errorf("%s: UDP checksum %#04x, want %#04x", what, got, want)
	}
	if at.Family == 4 {
		var sum uint32
		for i := 0; i < 20; i += 2 {
			sum += uint32(binary.BigEndian.Uint16(frame[at.L3+i:]))
		}
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		if sum != 0xffff {
			t.Errorf("%s: IPv4 header checksum does not hold (%#04x)", what, sum)
		}
	}
}

// l2tpHeader reads the fields of the L2TP control header at at.
func l2tpHeader(frame []byte, at classify.L2TPAt) (flags, length uint16, id uint32, ns, nr uint16) {
	h := frame[at.Msg:]
	flags, length = binary.BigEndian.Uint16(h), binary.BigEndian.Uint16(h[2:])
	id = uint32(binary.BigEndian.Uint16(h[4:]))
	if flags&0x0f == 3 {
		id = binary.BigEndian.Uint32(h[4:])
	}
	return flags, length, id, binary.BigEndian.Uint16(h[8:]), binary.BigEndian.Uint16(h[10:])
}
