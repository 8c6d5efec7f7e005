package classify

import (
	"encoding/binary"

	"github.com/xdpcac/xdpcac/cac"
)

// Ports says what each UDP destination port carries, and which TCP
// destination ports are SIP's (the udp_ports and tcp_ports maps).
type Ports struct {
	udp    [65536]cac.PortKind
	sipTCP [65536]bool
}

// NewPorts returns a table with the given L2TP and SIP ports over UDP and
// no SIP port over TCP.
func NewPorts(l2tp, sip []uint16) *Ports {
	var p Ports
	for _, port := range l2tp {
		p.udp[port] = cac.PortL2TP
	}
	for _, port := range sip {
		p.udp[port] = cac.PortSIP
	}
	return &p
}

// SetSIPTCP makes sip the SIP ports over TCP, as maps.WriteTCPPorts does:
// a SYN without ACK to one of them is a sip-connect. It returns p.
func (p *Ports) SetSIPTCP(sip []uint16) *Ports {
	p.sipTCP = [65536]bool{}
	for _, port := range sip {
		p.sipTCP[port] = true
	}
	return p
}

// Result is what the classifier made of a frame.
type Result struct {
	Kind  cac.Kind
	Class cac.Class // meaningful only when Kind is cac.Session
	// Odd marks a request in a form stricter parsers miss: a SIP method
	// not in upper case, leading CRLFs, several To headers; a PADI or
	// PADR with a session ID.
	Odd bool
}

func (r Result) String() string {
	if r.Kind == cac.Session {
		return r.Class.String()
	}
	return r.Kind.String()
}

func kind(k cac.Kind) Result { return Result{Kind: k} }

func session(c cac.Class) Result { return Result{Kind: cac.Session, Class: c} }

const (
	etherTypeIPv4     = 0x0800
	etherTypeIPv6     = 0x86dd
	etherTypePPPoEDsc = 0x8863
	etherTypeTooDeep  = 0xffff // ETH_P_TOO_DEEP: more VLAN tags than maxTags
	maxVLANs          = 2      // CAC_MAX_VLANS: the tags a per-source key holds
	maxTags           = 3      // CAC_MAX_TAGS: the tags walked to the EtherType
	maxExtHeaders     = 16     // CAC_MAX_EXTHDRS: one more is malformed
	protoUDP          = 17
	protoTCP          = 6
	tcpHeader         = 20 // struct tcphdr without options
	tcpSYN, tcpACK    = 0x02, 0x10
)

func isVLAN(t uint16) bool { return t == 0x8100 || t == 0x88a8 || t == 0x9100 }

// Classify returns what the XDP program makes of frame, its surplus
// priority tags taken out first as the program does (StripPriorityTags).
func Classify(frame []byte, ports *Ports) Result {
	var r Reader
	return r.Classify(frame, ports)
}

// Classify is the package's Classify, read by r.
func (r *Reader) Classify(frame []byte, ports *Ports) Result {
	res, _ := r.ClassifySIP(StripPriorityTags(frame), ports)
	return res
}

// ClassifySIP is what the classifier makes of a frame as the program
// reads it, after StripPriorityTags (which it applies once, first), and
// the SIP message as the classifier read it, after its leading bytes; nil
// for other frames.
func ClassifySIP(frame []byte, ports *Ports) (Result, []byte) {
	var r Reader
	return r.ClassifySIP(frame, ports)
}

// ClassifySIP is the package's ClassifySIP, read by r: a request's header
// lines walked for its To headers are indexed for the readers after it.
func (r *Reader) ClassifySIP(frame []byte, ports *Ports) (Result, []byte) {
	return r.classifyFrame(frame, ports.byDest, &ports.sipTCP)
}

// portKind says what the UDP datagram whose header starts udp carries.
type portKind func(udp []byte) cac.PortKind

// byDest is what a datagram coming in carries: the kind of its destination
// port, as the XDP program reads it (UDP_KIND of bpf/parse.h).
func (p *Ports) byDest(udp []byte) cac.PortKind { return p.udp[be16(udp[2:])] }

// classifyFrame is ClassifySIP with the datagram's carrier read by carrier.
// sipTCP is the SIP TCP ports; nil reads no TCP segment, as the egress
// program does not.
func (r *Reader) classifyFrame(frame []byte, carrier portKind, sipTCP *[65536]bool) (Result, []byte) {
	etherType, off := l2(frame)
	switch {
	case etherType == etherTypePPPoEDsc:
		return classifyPPPoE(frame, off), nil
	case etherType == etherTypeTooDeep:
		// Linux strips any number of priority tags and may hand what
		// is inside to a SIP server: malformed, never unseen.
		return kind(cac.Malformed), nil
	case etherType == etherTypeIPv4 || etherType == etherTypeIPv6:
		return r.classifyUDP(datagram(frame, etherType, off, carrier, sipTCP))
	}
	return kind(cac.Unwatched), nil
}

// l2 returns the EtherType after the VLAN tags and the offset of what it
// announces; 0 for a frame too short for its tags, etherTypeTooDeep for
// one with more of them than the filter walks.
func l2(frame []byte) (etherType uint16, off int) {
	if len(frame) < 14 {
		return 0, 0
	}
	etherType, off = be16(frame[12:]), 14
	for i := 0; i < maxTags && isVLAN(etherType); i++ {
		if off+4 > len(frame) {
			return 0, 0
		}
		etherType = be16(frame[off+2:])
		off += 4
	}
	if isVLAN(etherType) {
		return etherTypeTooDeep, off
	}
	return etherType, off
}

// datagram finds the UDP datagram of an IPv4 or IPv6 packet at l3.
func datagram(frame []byte, etherType uint16, l3 int, carrier portKind, sipTCP *[65536]bool) udpMsg {
	var u udpMsg
	if etherType == etherTypeIPv4 {
		u = ipv4(frame, l3, carrier, sipTCP)
	} else {
		u = ipv6(frame, l3, carrier, sipTCP)
	}
	u.l3 = l3
	return u
}

func classifyPPPoE(frame []byte, off int) Result {
	if off+6 > len(frame) {
		return kind(cac.Malformed)
	}
	h := frame[off:]
	if h[0] != 0x11 || off+6+int(be16(h[4:])) > len(frame) {
		return kind(cac.Malformed)
	}
	var c cac.Class
	switch h[1] {
	case 0x09:
		c = cac.PPPoEPADI
	case 0x19:
		c = cac.PPPoEPADR
	default:
		return kind(cac.Other)
	}
	// RFC 2516 gives them session ID 0; pppoe-server answers any.
	r := session(c)
	r.Odd = be16(h[2:]) != 0
	return r
}

// udpMsg is a UDP payload on a watched port, or why there is none.
type udpMsg struct {
	verdict    cac.Kind // Unwatched, Fragment or Malformed; Session when msg is set
	port       cac.PortKind
	connect    bool // a sip-connect: a SYN to a SIP TCP port, no message
	msg        []byte
	fragmented bool // a first fragment: the message goes on elsewhere
	l3, l4     int  // where the IP and UDP headers start
}

func verdictOnly(k cac.Kind) udpMsg { return udpMsg{verdict: k} }

// udp checks the lengths of a datagram at l4 to a watched port; ipEnd is the
// end of the IP payload, already known to be inside the frame. Over IPv6
// (v6) a UDP length of 0 is the whole payload, as Linux reads it.
func udp(frame []byte, l4, ipEnd int, fragmented bool, port cac.PortKind, v6 bool) udpMsg {
	ipPayload := ipEnd - l4
	udpLen := int(be16(frame[l4+4:]))
	if udpLen == 0 && v6 {
		udpLen = ipPayload
	}
	if ipPayload < 8 || udpLen < 8 {
		return verdictOnly(cac.Malformed)
	}
	if udpLen > ipPayload {
		if !fragmented {
			return verdictOnly(cac.Malformed)
		}
		udpLen = ipPayload // the first fragment holds what it holds
	}
	return udpMsg{verdict: cac.Session, port: port, msg: frame[l4+8 : l4+udpLen], fragmented: fragmented, l4: l4}
}

// tcpConnect is tcp_connect of bpf/parse.h: a SYN without ACK (whatever
// else is set) to a SIP TCP port is a sip-connect, every other segment is
// not ours (docs/design.md, "SIP connections").
func tcpConnect(frame []byte, l4 int, sipTCP *[65536]bool) udpMsg {
	if sipTCP == nil || l4+tcpHeader > len(frame) || frame[l4+13]&(tcpSYN|tcpACK) != tcpSYN {
		return verdictOnly(cac.Unwatched)
	}
	if !sipTCP[be16(frame[l4+2:])] {
		return verdictOnly(cac.Unwatched)
	}
	return udpMsg{verdict: cac.Session, connect: true, l4: l4}
}

func ipv4(frame []byte, l3 int, carrier portKind, sipTCP *[65536]bool) udpMsg {
	if l3+20 > len(frame) {
		return verdictOnly(cac.Unwatched)
	}
	h := frame[l3:]
	if h[0]>>4 != 4 || (h[9] != protoUDP && h[9] != protoTCP) {
		return verdictOnly(cac.Unwatched)
	}
	ihl := int(h[0]&0x0f) * 4
	if ihl < 20 || l3+ihl > len(frame) {
		return verdictOnly(cac.Unwatched)
	}
	frag := be16(h[6:])
	if h[9] == protoTCP {
		if frag&0x1fff != 0 {
			return verdictOnly(cac.Unwatched)
		}
		return tcpConnect(frame, l3+ihl, sipTCP)
	}
	if frag&0x1fff != 0 {
		return verdictOnly(cac.Fragment)
	}
	l4 := l3 + ihl
	if l4+8 > len(frame) {
		return verdictOnly(cac.Unwatched)
	}
	port := carrier(frame[l4:])
	if port == cac.PortNone {
		return verdictOnly(cac.Unwatched)
	}
	totLen := int(be16(h[2:]))
	if totLen < ihl || l3+totLen > len(frame) {
		return verdictOnly(cac.Malformed)
	}
	return udp(frame, l4, l3+totLen, frag&0x2000 != 0, port, false)
}

func ipv6(frame []byte, l3 int, carrier portKind, sipTCP *[65536]bool) udpMsg {
	if l3+40 > len(frame) {
		return verdictOnly(cac.Unwatched)
	}
	if frame[l3]>>4 != 6 {
		return verdictOnly(cac.Unwatched)
	}
	next := frame[l3+6]
	off := l3 + 40
	fragmented := false
walk:
	for i := 0; i < maxExtHeaders; i++ {
		switch next {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if off+2 > len(frame) {
				return verdictOnly(cac.Unwatched)
			}
			next = frame[off]
			off += (int(frame[off+1]) + 1) * 8
		case 44: // fragment
			if off+8 > len(frame) {
				return verdictOnly(cac.Unwatched)
			}
			frag := be16(frame[off+2:])
			if frag&0xfff8 != 0 {
				// The fragmentable part may start with destination
				// options or routing before the UDP header.
				if n := frame[off]; n == protoUDP || n == 60 || n == 43 {
					return verdictOnly(cac.Fragment)
				}
				return verdictOnly(cac.Unwatched)
			}
			fragmented = frag&1 != 0
			next = frame[off]
			off += 8
		default:
			break walk
		}
	}
	switch next {
	case 0, 43, 44, 60: // more extension headers than the bound
		return verdictOnly(cac.Malformed)
	}
	if next == protoTCP {
		return tcpConnect(frame, off, sipTCP)
	}
	if next != protoUDP || off+8 > len(frame) {
		return verdictOnly(cac.Unwatched)
	}
	port := carrier(frame[off:])
	if port == cac.PortNone {
		return verdictOnly(cac.Unwatched)
	}
	payloadLen := int(be16(frame[l3+4:]))
	ipEnd := l3 + 40 + payloadLen
	// A zero payload length means a jumbogram: never a signalling message.
	if payloadLen == 0 || ipEnd > len(frame) || off > ipEnd {
		return verdictOnly(cac.Malformed)
	}
	return udp(frame, off, ipEnd, fragmented, port, true)
}

func (r *Reader) classifyUDP(u udpMsg) (Result, []byte) {
	if u.verdict != cac.Session {
		return kind(u.verdict), nil
	}
	if u.connect {
		return session(cac.SIPConnect), nil
	}
	if u.port == cac.PortL2TP {
		return classifyL2TP(u.msg, u.fragmented), nil
	}
	return r.classifySIP(u.msg, u.fragmented)
}

// L2TP control header bits (RFC 2661 §3.1, RFC 3931 §3.2.1).
const (
	l2tpT       = 0x8000
	l2tpL       = 0x4000
	l2tpS       = 0x0800
	l2tpO       = 0x0200
	l2tpCtrlHdr = 12
	avpHidden   = 0x4000
	msgSCCRQ    = 1
	msgICRQ     = 10
)

func classifyL2TP(m []byte, fragmented bool) Result {
	// A first fragment must at least show the Message Type AVP.
	if fragmented && len(m) < l2tpCtrlHdr+8 {
		return kind(cac.Malformed)
	}
	if len(m) < 2 {
		return kind(cac.Malformed)
	}
	flags := be16(m)
	ver := flags & 0x0f
	// L2F shares port 1701 (version 1); data messages open nothing.
	if (ver != 2 && ver != 3) || flags&l2tpT == 0 {
		return kind(cac.Other)
	}
	if flags&l2tpL == 0 || flags&l2tpS == 0 || (ver == 2 && flags&l2tpO != 0) {
		return kind(cac.Malformed)
	}
	if len(m) < l2tpCtrlHdr {
		return kind(cac.Malformed)
	}
	// In a first fragment the message goes on past what is here.
	length := int(be16(m[2:]))
	if length < l2tpCtrlHdr || (length > len(m) && !fragmented) {
		return kind(cac.Malformed)
	}
	if length == l2tpCtrlHdr {
		return kind(cac.Other) // ZLB acknowledgement
	}
	if length < l2tpCtrlHdr+8 {
		return kind(cac.Malformed)
	}
	// The first AVP must be Message Type: vendor 0, attribute 0, 8 bytes.
	avp := m[l2tpCtrlHdr:]
	if be16(avp)&avpHidden != 0 || be16(avp)&0x03ff != 8 || be16(avp[2:]) != 0 || be16(avp[4:]) != 0 {
		return kind(cac.Malformed)
	}
	switch be16(avp[6:]) {
	case msgSCCRQ:
		return session(cac.L2TPSCCRQ)
	case msgICRQ:
		return session(cac.L2TPICRQ)
	}
	return kind(cac.Other)
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
