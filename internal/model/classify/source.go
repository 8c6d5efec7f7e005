package classify

import (
	"encoding/binary"

	"github.com/xdpcac/xdpcac/cac"
)

// Source is who sent a frame, as far as the frame says: the Ethernet
// source and VLAN IDs, and the IP source address once there is one.
type Source struct {
	MAC    [6]byte
	VLANs  [2]uint16 // IDs of the tags present, outer first; 0 for none
	Family uint8     // 4 or 6 for an IP source, 0 otherwise
	Addr   [16]byte  // IPv4 in the first 4 bytes
}

// SourceOf reads the source of a frame that Classify found to be a first
// packet; for other frames it is meaningless.
func SourceOf(frame []byte) Source {
	var s Source
	if len(frame) < 14 {
		return s
	}
	copy(s.MAC[:], frame[6:12])
	etherType := binary.BigEndian.Uint16(frame[12:])
	off := 14
	for i := 0; i < maxTags && isVLAN(etherType) && off+4 <= len(frame); i++ {
		if i < maxVLANs { // a key holds the outer two
			s.VLANs[i] = binary.BigEndian.Uint16(frame[off:]) & 0x0fff
		}
		etherType = binary.BigEndian.Uint16(frame[off+2:])
		off += 4
	}
	switch {
	case etherType == etherTypeIPv4 && off+20 <= len(frame):
		s.Family = 4
		copy(s.Addr[:4], frame[off+12:off+16])
	case etherType == etherTypeIPv6 && off+40 <= len(frame):
		s.Family = 6
		copy(s.Addr[:], frame[off+8:off+24])
	}
	return s
}

// DestOf is the IP destination of a frame that ClassifySIPEgress found to
// be a request, as agent_to of bpf/egress.h reads it (IPv4 in the first 4
// bytes of Addr); Family is 0 for a frame with no IP header.
func DestOf(frame []byte) (family uint8, addr [16]byte) {
	etherType, off := l2(frame)
	switch {
	case etherType == etherTypeIPv4 && off+20 <= len(frame):
		copy(addr[:4], frame[off+16:off+20])
		return 4, addr
	case etherType == etherTypeIPv6 && off+40 <= len(frame):
		copy(addr[:], frame[off+24:off+40])
		return 6, addr
	}
	return 0, addr
}

// Mapped is the source address as the fast path keys it: 16 bytes, IPv4
// mapped into IPv6; all zero without an IP source.
func (s Source) Mapped() [16]byte {
	var a [16]byte
	switch s.Family {
	case 4:
		a[10], a[11] = 0xff, 0xff
		copy(a[12:], s.Addr[:4])
	case 6:
		a = s.Addr
	}
	return a
}

// Peer is what a dialog keeps of the source as one of its sides
// (dialog_peer of bpf/dialog.h); 0 without an IP source.
func (s Source) Peer() uint32 {
	if s.Family == 0 {
		return 0
	}
	return cac.DialogPeer(s.Mapped())
}
