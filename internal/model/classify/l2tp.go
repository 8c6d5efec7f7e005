package classify

import "github.com/xdpcac/xdpcac/cac"

// L2TPAt is where an L2TP control message of a tunnel sits in a frame:
// the offsets of its IP, UDP and L2TP headers, and the IP family.
type L2TPAt struct {
	L3, L4, Msg int
	Family      int // 4 or 6
}

// FindL2TP finds an L2TP control message of a tunnel (T, L and S set,
// version 2 or 3, a length of at least its header, within the frame or
// the first fragment) in a frame coming in, as the XDP program marks one
// RESULT_L2TP; egress finds one going out from an L2TP port, as the egress
// program reads it (udp_kind_egress of bpf/parse.h).
func FindL2TP(frame []byte, ports *Ports, egress bool) (L2TPAt, bool) {
	carrier := ports.byDest
	if egress {
		carrier = ports.egress
	}
	etherType, l3 := l2(frame)
	if etherType != etherTypeIPv4 && etherType != etherTypeIPv6 {
		return L2TPAt{}, false
	}
	u := datagram(frame, etherType, l3, carrier, nil)
	if u.verdict != cac.Session || u.port != cac.PortL2TP || len(u.msg) < l2tpCtrlHdr {
		return L2TPAt{}, false
	}
	m := u.msg
	flags, length := be16(m), int(be16(m[2:]))
	ver := flags & 0x0f
	if (ver != 2 && ver != 3) || flags&(l2tpT|l2tpL|l2tpS) != l2tpT|l2tpL|l2tpS || (ver == 2 && flags&l2tpO != 0) ||
		length < l2tpCtrlHdr || (length > len(m) && !u.fragmented) {
		return L2TPAt{}, false
	}
	at := L2TPAt{L3: u.l3, L4: u.l4, Msg: u.l4 + 8, Family: 4}
	if etherType == etherTypeIPv6 {
		at.Family = 6
	}
	return at, true
}
