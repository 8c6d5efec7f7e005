package pkt

import (
	"encoding/binary"
	"net/netip"
)

// Layer is one header of a frame.
type Layer interface {
	// wrap returns the layer with payload behind it; inner is the layer
	// directly inside, nil for none.
	wrap(payload []byte, inner Layer) []byte
}

type etherTyped interface{ etherType() uint16 }

type ipProtocol interface{ ipProto() uint8 }

// Frame encodes layers, outermost first.
func Frame(layers ...Layer) []byte {
	var b []byte
	var inner Layer
	for i := len(layers) - 1; i >= 0; i-- {
		b = layers[i].wrap(b, inner)
		inner = layers[i]
	}
	return b
}

func innerEtherType(inner Layer, set uint16) uint16 {
	if set != 0 {
		return set
	}
	if t, ok := inner.(etherTyped); ok {
		return t.etherType()
	}
	return 0x88b5 // IEEE local experimental
}

func be16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }

// Default addresses, from the documentation ranges.
var (
	PeerMAC  = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x53, 0x01}
	LocalMAC = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x53, 0x02}
	PeerV4   = netip.MustParseAddr("192.0.2.1")
	LocalV4  = netip.MustParseAddr("192.0.2.2")
	PeerV6   = netip.MustParseAddr("2001:db8::1")
	LocalV6  = netip.MustParseAddr("2001:db8::2")
)

// Ether is an Ethernet II header. Zero addresses become PeerMAC→LocalMAC;
// Dst is used as given when Broadcast is set.
type Ether struct {
	Src, Dst  [6]byte
	Broadcast bool
	Type      uint16
}

func (e Ether) wrap(p []byte, inner Layer) []byte {
	src, dst := e.Src, e.Dst
	if src == ([6]byte{}) {
		src = PeerMAC
	}
	switch {
	case e.Broadcast:
		dst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	case dst == ([6]byte{}):
		dst = LocalMAC
	}
	b := append(dst[:], src[:]...)
	b = be16(b, innerEtherType(inner, e.Type))
	return append(b, p...)
}

// VLAN is an 802.1Q tag (TPID 0x8100 unless set).
type VLAN struct {
	TPID uint16
	ID   uint16
	Type uint16
}

func (v VLAN) etherType() uint16 {
	if v.TPID != 0 {
		return v.TPID
	}
	return 0x8100
}

func (v VLAN) wrap(p []byte, inner Layer) []byte {
	b := be16(nil, v.ID&0x0fff)
	b = be16(b, innerEtherType(inner, v.Type))
	return append(b, p...)
}

// Raw is bytes as they are: a payload, or a header written by hand.
type Raw []byte

func (r Raw) wrap(p []byte, _ Layer) []byte { return append(append([]byte(nil), r...), p...) }

// UDP is a UDP header; Len overrides the computed length. The checksum is
// left zero, which IPv4 allows and the classifier never reads.
type UDP struct {
	Src, Dst uint16
	Len      int
}

func (UDP) ipProto() uint8 { return 17 }

func (u UDP) wrap(p []byte, _ Layer) []byte {
	src := u.Src
	if src == 0 {
		src = u.Dst
	}
	n := 8 + len(p)
	switch {
	case u.Len < 0:
		n = 0 // a length of 0, which IPv6 receivers read as the whole payload
	case u.Len != 0:
		n = u.Len
	}
	b := be16(nil, src)
	b = be16(b, u.Dst)
	b = be16(b, uint16(n))
	b = be16(b, 0)
	return append(b, p...)
}

// TCP is a bare TCP header: a SYN that opens a connection, or with Ack a
// segment of one already open (ACK alone).
type TCP struct {
	Src, Dst uint16
	Ack      bool
}

func (TCP) ipProto() uint8 { return 6 }

func (t TCP) wrap(p []byte, _ Layer) []byte {
	b := be16(nil, t.Src)
	b = be16(b, t.Dst)
	flags := byte(0x02) // SYN
	if t.Ack {
		flags = 0x10 // ACK
	}
	b = append(b, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0)
	return append(b, p...)
}
