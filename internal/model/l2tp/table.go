package l2tp

import (
	"encoding/binary"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// Directions of an entry, as struct cac_l2tp_key's dir.
const (
	ToLNS = 0 // the ID is the LNS's: the LAC's messages name it
	ToLAC = 1 // the ID is the LAC's: the LNS's messages name it
)

// The lifetimes of bpf/shared.h: idle (no control message either way), and
// held after a StopCCN for its acknowledgements.
const (
	IdleNS      = 600 * 1e9
	CloseHoldNS = 60 * 1e9
)

// Key is struct cac_l2tp_key: a tunnel as one side's messages name it, by
// the LAC's address (IPv4 mapped into IPv6) and port.
type Key struct {
	Addr    [16]byte
	ID      uint32
	Port    uint16
	Version uint8
	Dir     uint8
}

// Tunnel is struct cac_l2tp_tunnel.
type Tunnel struct {
	SeenNS, ClosedNS uint64
	// Refused holds the LAC's last 64 messages before NextNs, newest in
	// bit 0: a bit set is an ICRQ answered, whose copy is answered again.
	Refused         uint64
	PeerID, Skipped uint32
	NextNs          uint16
	Reason          cac.Reason // of the last ICRQ answered
}

func (t *Tunnel) gone(now uint64) bool {
	if t.ClosedNS != 0 && now > t.ClosedNS+CloseHoldNS {
		return true
	}
	return now > t.SeenNS+IdleNS
}

// Table is the l2tp_tunnels map, without its LRU bound.
type Table map[Key]*Tunnel

// forget deletes both entries of a tunnel; k is its ToLNS key.
func (tb Table) forget(k Key, lacID uint32) {
	delete(tb, k)
	k.Dir, k.ID = ToLAC, lacID
	delete(tb, k)
}

// msg is a control message in a frame, as the programs read it.
type msg struct {
	frame []byte
	at    classify.L2TPAt
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

func (m msg) hdr() []byte     { return m.frame[m.at.Msg:] }
func (m msg) version() uint8  { return uint8(be16(m.hdr()) & 0x0f) }
func (m msg) length() int     { return int(be16(m.hdr()[2:])) }
func (m msg) ns() uint16      { return be16(m.hdr()[8:]) }
func (m msg) nr() uint16      { return be16(m.hdr()[10:]) }
func (m msg) udp() []byte     { return m.frame[m.at.L4:] }
func (m msg) present() int    { return len(m.frame) - m.at.Msg }
func (m msg) srcPort() uint16 { return be16(m.udp()) }
func (m msg) dstPort() uint16 { return be16(m.udp()[2:]) }

// id is the ID the header names its receiver by (l2tp_id).
func (m msg) id() uint32 {
	h := m.hdr()
	if m.version() == 3 {
		return binary.BigEndian.Uint32(h[4:])
	}
	return uint32(be16(h[4:]))
}

// msgType is the Message Type of a message whose first AVP has vendor and
// attribute 0, or 0: what both programs take for it.
func (m msg) msgType() uint16 {
	h := m.hdr()
	if m.length() < 20 || len(h) < 20 || be16(h[14:]) != 0 || be16(h[16:]) != 0 {
		return 0
	}
	return be16(h[18:])
}

// addr returns the source (or destination) address, IPv4 mapped.
func (m msg) addr(source bool) [16]byte {
	var a [16]byte
	ip := m.frame[m.at.L3:]
	if m.at.Family == 4 {
		a[10], a[11] = 0xff, 0xff
		off := 16
		if source {
			off = 12
		}
		copy(a[12:], ip[off:off+4])
	} else {
		off := 24
		if source {
			off = 8
		}
		copy(a[:], ip[off:off+16])
	}
	return a
}

// lacKey is the ToLNS key of a message from a LAC.
func (m msg) lacKey() Key {
	return Key{Addr: m.addr(true), ID: m.id(), Port: m.srcPort(), Version: m.version(), Dir: ToLNS}
}

// lnsKey is the ToLAC key of a message from the LNS.
func (m msg) lnsKey() Key {
	return Key{Addr: m.addr(false), ID: m.id(), Port: m.dstPort(), Version: m.version(), Dir: ToLAC}
}

// put16 writes a 16-bit field and updates the UDP checksum for it as
// RFC 1624 does; a checksum of 0 (none, over IPv4) stays.
func (m msg) put16(off int, v uint16) {
	old := be16(m.frame[off:])
	binary.BigEndian.PutUint16(m.frame[off:], v)
	check := be16(m.udp()[6:])
	if check == 0 {
		return
	}
	c := fold(uint32(^check) + uint32(^old) + uint32(v))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(m.udp()[6:], c)
}

// fold folds a 32-bit one's complement sum into a checksum.
func fold(sum uint32) uint16 {
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^uint16(sum)
}
