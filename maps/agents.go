package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// MaxAgentAddrs is CAC_MAX_AGENT_ADDRS of bpf/shared.h: how many
// addresses the agents table holds, for all the session agents together.
const MaxAgentAddrs = int(bpf.XdpCacCapacityCAC_MAX_AGENT_ADDRS)

func agentOf(a policy.Agent) bpf.XdpCacAgent {
	v := bpf.XdpCacAgent{Limit: limitOf(a.Limit)}
	for _, c := range a.OutCodes {
		if c >= 300 && c <= 699 {
			i := c - 300
			v.OutCodes[i/64] |= 1 << (i % 64)
		}
	}
	return v
}

// WriteAgentAddrs makes the agents table hold exactly addrs: each address
// (IPv4 mapped into IPv6, as the model keys it) to its agent's index.
// Entries change one by one; a request from an address being changed is
// seen as from its old agent or its new, and from none only while it is
// being removed.
func WriteAgentAddrs(m *ebpf.Map, addrs map[netip.Addr]uint32) error {
	if len(addrs) > int(m.MaxEntries()) {
		return fmt.Errorf("%d session agent addresses: the agents table holds %d", len(addrs), m.MaxEntries())
	}
	want := map[bpf.XdpCacPrefix]uint32{}
	for a, i := range addrs {
		if i >= policy.MaxAgents {
			return fmt.Errorf("session agent index %d: at most %d agents", i, policy.MaxAgents)
		}
		want[bpf.XdpCacPrefix{Prefixlen: 128, Addr: netip.AddrFrom16(a.As16()).As16()}] = i
	}
	var stale []bpf.XdpCacPrefix
	var k bpf.XdpCacPrefix
	var v uint32
	it := m.Iterate()
	for it.Next(&k, &v) {
		if _, ok := want[k]; !ok {
			stale = append(stale, k)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read session agent addresses: %w", err)
	}
	// Stale ones go first, so that a full table makes room.
	for _, k := range stale {
		if err := m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("remove session agent address %v: %w", netip.AddrFrom16(k.Addr), err)
		}
	}
	for k, i := range want {
		if err := m.Update(&k, i, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write session agent address %v: %w", netip.AddrFrom16(k.Addr), err)
		}
	}
	return nil
}

// ReadAgentSeen returns the monotonic time of each agent's last SIP
// request, by index; 0 is never.
func ReadAgentSeen(m *ebpf.Map, n int) ([]uint64, error) {
	out := make([]uint64, n)
	for i := range out {
		if err := m.Lookup(uint32(i), &out[i]); err != nil {
			return nil, fmt.Errorf("read last request of session agent %d: %w", i, err)
		}
	}
	return out, nil
}

// The kinds of SIP event: enum cac_sip_event_kind.
const (
	SIPAgentResponse = uint8(bpf.XdpCacSipEventKindCAC_SIP_AGENT_RESPONSE) // an agent's response with an out-service code
	SIPRejected      = uint8(bpf.XdpCacSipEventKindCAC_SIP_REJECTED)       // a refused request to answer with 503
)

// SIPEvent is a SIP message the fast path handed up: struct cac_sip_event.
type SIPEvent struct {
	Kind     uint8
	Agent    uint32
	Code     uint16
	Src, Dst netip.AddrPort
	Message  []byte
}

// DecodeSIPEvent reads a struct cac_sip_event from the ring buffer: a
// record of that size, whose message fits its data.
func DecodeSIPEvent(raw []byte) (SIPEvent, error) {
	var ev bpf.XdpCacSipEvent
	if _, err := binary.Decode(raw, binary.NativeEndian, &ev); err != nil {
		return SIPEvent{}, fmt.Errorf("decode SIP event of %d bytes: %w", len(raw), err)
	}
	if int(ev.Len) > len(ev.Data) {
		return SIPEvent{}, fmt.Errorf("decode SIP event: message of %d bytes in %d", ev.Len, len(ev.Data))
	}
	addr := func(b [16]byte) netip.Addr {
		a := netip.AddrFrom16(b)
		if ev.Family == 4 {
			return a.Unmap()
		}
		return a
	}
	return SIPEvent{
		Kind: ev.Kind, Agent: ev.Agent, Code: ev.Code,
		Src: netip.AddrPortFrom(addr(ev.Saddr), ev.Sport), Dst: netip.AddrPortFrom(addr(ev.Daddr), ev.Dport),
		Message: append([]byte(nil), ev.Data[:ev.Len]...),
	}, nil
}

// ResetAgents empties the last-request stamp and the bucket of the agents
// at idx, whose place a different agent took.
func ResetAgents(seen, buckets *ebpf.Map, idx []uint32) error {
	for _, i := range idx {
		if err := seen.Update(i, uint64(0), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("reset session agent %d: %w", i, err)
		}
		if err := buckets.Update(i, bpf.XdpCacBucket{}, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("reset session agent %d: %w", i, err)
		}
	}
	return nil
}
