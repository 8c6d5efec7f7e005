package classify

import "github.com/xdpcac/xdpcac/cac"

// ClassifySIPEgress is ClassifySIP for a frame going out, as the egress
// program bpf/tc_dialogs.c reads it: a datagram to or from a watched SIP
// port is SIP, since what the SIP server sends comes from its port and goes
// to whatever port its peer has (udp_kind_egress of bpf/parse.h).
func ClassifySIPEgress(frame []byte, ports *Ports) (Result, []byte) {
	var r Reader
	return r.ClassifySIPEgress(frame, ports)
}

// ClassifySIPEgress is the package's ClassifySIPEgress, read by r.
func (r *Reader) ClassifySIPEgress(frame []byte, ports *Ports) (Result, []byte) {
	return r.classifyFrame(frame, ports.egress, nil)
}

// egress is udp_kind_egress: SIP when the source or destination port is a
// SIP port, L2TP when the source port is an L2TP port (the LNS's), none
// otherwise.
func (p *Ports) egress(udp []byte) cac.PortKind {
	if p.udp[be16(udp[2:])] == cac.PortSIP || p.udp[be16(udp)] == cac.PortSIP {
		return cac.PortSIP
	}
	if p.udp[be16(udp)] == cac.PortL2TP {
		return cac.PortL2TP
	}
	return cac.PortNone
}
