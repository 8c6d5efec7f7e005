package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
)

// Settings are the run-time settings of the fast path.
type Settings struct {
	// MalformedDrop drops malformed frames instead of passing them.
	MalformedDrop bool
	// Reject hands a refused request of a SIP class to user space to
	// answer with 503 (action: reject); only the classes out of dialog
	// (cac.Class.Answerable) can be.
	Reject [cac.NumClasses]bool
}

// WriteSettings replaces the settings as one map value.
func WriteSettings(m *ebpf.Map, s Settings) error {
	var v bpf.XdpCacSettings
	if s.MalformedDrop {
		v.MalformedDrop = 1
	}
	for c, on := range s.Reject {
		if !on {
			continue
		}
		if !cac.Class(c).Answerable() {
			return fmt.Errorf("write settings map: a refused %v request cannot be answered", cac.Class(c))
		}
		v.SipReject |= 1 << (c - int(cac.SIPInvite))
	}
	if err := m.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write settings map: %w", err)
	}
	return nil
}

// WritePorts replaces the UDP port table with the given L2TP and SIP ports.
// The kernel copies the value word by word, so while it is written a port
// is seen either as it was or as it will be, never as anything else.
func WritePorts(m *ebpf.Map, l2tp, sip []uint16) error {
	var v bpf.XdpCacPorts
	for _, p := range l2tp {
		v.Kind[p] = uint8(cac.PortL2TP)
	}
	for _, p := range sip {
		if v.Kind[p] != 0 {
			return fmt.Errorf("port %d is both an L2TP and a SIP port", p)
		}
		v.Kind[p] = uint8(cac.PortSIP)
	}
	if err := m.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write udp_ports map: %w", err)
	}
	return nil
}

// ReadPorts reads the UDP port table back: the L2TP and SIP ports in
// force, in increasing order. cacctl status reads what the filter
// watches here rather than in a file, which may have changed since.
func ReadPorts(m *ebpf.Map) (l2tp, sip []uint16, err error) {
	var v bpf.XdpCacPorts
	if err := m.Lookup(uint32(0), &v); err != nil {
		return nil, nil, fmt.Errorf("read udp_ports map: %w", err)
	}
	for p, k := range v.Kind {
		switch cac.PortKind(k) {
		case cac.PortL2TP:
			l2tp = append(l2tp, uint16(p))
		case cac.PortSIP:
			sip = append(sip, uint16(p))
		}
	}
	return l2tp, sip, nil
}
