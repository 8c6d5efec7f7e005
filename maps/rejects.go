package maps

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
)

// Reject is the record of one source's rejects of one class for one
// reason within one second (DESIGN.md §5).
type Reject struct {
	Class   cac.Class
	Reason  cac.Reason
	Source  string // an IP address, or a MAC with its VLAN IDs
	Count   uint64
	FirstNS uint64 // monotonic clock of the first and last reject
	LastNS  uint64
	Ifindex uint32
	// Interface is the attachment the record comes from, when known:
	// IFACE, or NETNS:IFACE.
	Interface string
}

// sourceOthers is CAC_SOURCE_OTHERS: the record of rejects from sources that
// got no record of their own, when a CPU had made its new records for the
// second (bpf/reject.h).
const sourceOthers = 0xff

// SourceString names a source as a record shows it.
func SourceString(s bpf.XdpCacSource) string {
	switch s.Family {
	case sourceOthers:
		return "other sources"
	case 4:
		return netip.AddrFrom4([4]byte(s.Addr[:4])).String()
	case 6:
		return netip.AddrFrom16(s.Addr).String()
	}
	var b strings.Builder
	b.WriteString(net.HardwareAddr(s.Addr[:6]).String())
	switch {
	case s.Vlan[1] != 0: // an outer tag of VLAN 0 (priority only) still counts
		fmt.Fprintf(&b, " vlan %d.%d", s.Vlan[0], s.Vlan[1])
	case s.Vlan[0] != 0:
		fmt.Fprintf(&b, " vlan %d", s.Vlan[0])
	}
	return b.String()
}

// RejectOf converts a record from the kernel's layout.
func RejectOf(k bpf.XdpCacRejectKey, r bpf.XdpCacReject) Reject {
	return Reject{
		Class: cac.Class(k.Source.Class), Reason: cac.Reason(k.Reason), Source: SourceString(k.Source),
		Count: r.Count, FirstNS: r.FirstNs, LastNS: r.LastNs, Ifindex: r.Ifindex,
	}
}

// ReadRejects returns the records of the current second of every key in
// the rejects table.
func ReadRejects(m *ebpf.Map) ([]Reject, error) {
	var out []Reject
	var k bpf.XdpCacRejectKey
	var r bpf.XdpCacReject
	it := m.Iterate()
	for it.Next(&k, &r) {
		out = append(out, RejectOf(k, r))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read rejects: %w", err)
	}
	return out, nil
}

// DecodeRejectEvent reads a struct cac_reject_event from the ring buffer:
// a finished second of rejects.
func DecodeRejectEvent(raw []byte) (Reject, uint64, error) {
	var k bpf.XdpCacRejectKey
	var r bpf.XdpCacReject
	n, err := binary.Decode(raw, binary.NativeEndian, &k)
	if err != nil {
		return Reject{}, 0, fmt.Errorf("decode reject event: %w", err)
	}
	if _, err := binary.Decode(raw[n:], binary.NativeEndian, &r); err != nil {
		return Reject{}, 0, fmt.Errorf("decode reject event: %w", err)
	}
	return RejectOf(k, r), r.Second, nil
}
