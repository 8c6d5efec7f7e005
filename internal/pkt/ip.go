package pkt

import (
	"encoding/binary"
	"net/netip"
)

// orAddr is a, or def when a is the zero Addr.
func orAddr(a, def netip.Addr) netip.Addr {
	if a.IsValid() {
		return a
	}
	return def
}

func innerProto(inner Layer, set uint8) uint8 {
	if set != 0 {
		return set
	}
	if p, ok := inner.(ipProtocol); ok {
		return p.ipProto()
	}
	return 253 // experimentation
}

// IPv4 is an IPv4 header. Zero addresses become PeerV4→LocalV4. FragOff is
// in 8-byte units; TotLen and IHL override the computed values. ID is the
// identification, 0x1234 unless set: fragments of one datagram share it.
type IPv4 struct {
	Src, Dst netip.Addr
	ID       uint16
	Options  []byte // padded to a multiple of 4
	Proto    uint8
	FragOff  uint16
	MF       bool
	TotLen   int
	IHL      int
	Version  uint8
}

func (IPv4) etherType() uint16 { return 0x0800 }

func (h IPv4) wrap(p []byte, inner Layer) []byte {
	src, dst := orAddr(h.Src, PeerV4), orAddr(h.Dst, LocalV4)
	opts := append([]byte(nil), h.Options...)
	for len(opts)%4 != 0 {
		opts = append(opts, 0) // end of options list
	}
	ihl := (20 + len(opts)) / 4
	if h.IHL != 0 {
		ihl = h.IHL
	}
	version := h.Version
	if version == 0 {
		version = 4
	}
	tot := 20 + len(opts) + len(p)
	if h.TotLen != 0 {
		tot = h.TotLen
	}
	frag := h.FragOff & 0x1fff
	if h.MF {
		frag |= 0x2000
	}
	b := []byte{version<<4 | uint8(ihl&0x0f), 0}
	b = be16(b, uint16(tot))
	id := h.ID
	if id == 0 {
		id = 0x1234
	}
	b = be16(b, id)
	b = be16(b, frag)
	b = append(b, 64, innerProto(inner, h.Proto), 0, 0)
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	b = append(b, opts...)
	binary.BigEndian.PutUint16(b[10:], checksum(b))
	return append(b, p...)
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// IPv6 is an IPv6 header with its extension headers. Zero addresses become
// PeerV6→LocalV6; PayloadLen overrides the computed length.
type IPv6 struct {
	Src, Dst   netip.Addr
	Ext        []Ext
	Next       uint8
	PayloadLen int
	ZeroLen    bool // a zero payload length, as in a jumbogram
}

func (IPv6) etherType() uint16 { return 0x86dd }

// Ext is an IPv6 extension header: Proto 0 (hop-by-hop), 43 (routing),
// 60 (destination options) or 44 (fragment, with FragOff and MF).
type Ext struct {
	Proto   uint8
	Len     uint8 // in 8-byte units beyond the first 8 (not for fragment)
	FragOff uint16
	MF      bool
}

func (h IPv6) wrap(p []byte, inner Layer) []byte {
	src, dst := orAddr(h.Src, PeerV6), orAddr(h.Dst, LocalV6)
	next := innerProto(inner, h.Next)
	var ext []byte
	for i := len(h.Ext) - 1; i >= 0; i-- {
		e := h.Ext[i]
		var eb []byte
		if e.Proto == 44 {
			frag := e.FragOff << 3
			if e.MF {
				frag |= 1
			}
			eb = be16([]byte{next, 0}, frag)
			eb = append(eb, 0, 0, 0x56, 0x78)
		} else {
			eb = make([]byte, 8*(int(e.Len)+1))
			eb[0], eb[1] = next, e.Len
			eb[2], eb[3] = 1, 4 // a PadN option over the rest
		}
		ext = append(eb, ext...)
		next = e.Proto
	}
	plen := len(ext) + len(p)
	switch {
	case h.ZeroLen:
		plen = 0
	case h.PayloadLen != 0:
		plen = h.PayloadLen
	}
	b := []byte{0x60, 0, 0, 0}
	b = be16(b, uint16(plen))
	b = append(b, next, 64)
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	b = append(b, ext...)
	return append(b, p...)
}
