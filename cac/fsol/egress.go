package fsol

import "github.com/xdpcac/xdpcac/cac"

// ClassifySIPEgress is ClassifySIP for a frame going out, as the egress
// program bpf/tc_dialogs.c reads it: a datagram to or from a watched SIP
// port is SIP, since what the SIP server sends comes from its port and goes
// to whatever port its peer has; any other datagram is unwatched
// (udp_sip_either of bpf/parse.h).
func ClassifySIPEgress(frame []byte, ports *Ports) (Result, []byte) {
	return classifyFrame(frame, ports.either)
}

// either is udp_sip_either: SIP when the source or destination port is a
// SIP port, none otherwise.
func (p *Ports) either(udp []byte) cac.PortKind {
	if p[be16(udp[2:])] == cac.PortSIP || p[be16(udp)] == cac.PortSIP {
		return cac.PortSIP
	}
	return cac.PortNone
}
