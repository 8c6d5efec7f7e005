package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
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

func agentEgressOf(a policy.Agent) bpf.XdpCacAgentEgress {
	v := bpf.XdpCacAgentEgress{Connection: limitOf(a.Connection)}
	if a.FailFast {
		v.Flags |= uint32(bpf.XdpCacAgentFlagAGENT_FAIL_FAST)
	}
	return v
}

// writeAgentEgress fills slot of the egress settings: the agents', and
// nothing for every index past them, so that an address of an agent gone,
// still in the agents table while it is being removed, finds no limit of
// an earlier policy. An attachment of a version without egress admission
// has no such map, and nothing to write.
func writeAgentEgress(m *ebpf.Map, slot uint32, agents []policy.Agent) error {
	if m == nil {
		return nil
	}
	for i := 0; i < policy.MaxAgents; i++ {
		var v bpf.XdpCacAgentEgress
		if i < len(agents) {
			v = agentEgressOf(agents[i])
		}
		if err := m.Update(slot*policy.MaxAgents+uint32(i), v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write connection limit of session agent %d: %w", i, err)
		}
	}
	return nil
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
	// An INVITE the egress program refused, to answer on an agent's
	// behalf; its Code is the cac.EgressReason.
	SIPEgressRefused = uint8(bpf.XdpCacSipEventKindCAC_SIP_EGRESS_REFUSED)
	// A message, either way, of a dialog that holds sessions of a
	// max-sessions limit.
	SIPSession = uint8(bpf.XdpCacSipEventKindCAC_SIP_SESSION)
)

// SIPEvent is a SIP message the fast path handed up: struct cac_sip_event.
type SIPEvent struct {
	Kind  uint8
	Agent uint32
	Code  uint16
	// Sent is set for a response that answers an INVITE transaction the
	// SIP server sent toward the agent within Timer B.
	Sent bool
	// CallID is the hash of the Call-ID of a message of a dialog that
	// holds sessions (SIPSession), the sessions table's key.
	CallID   uint64
	Src, Dst netip.AddrPort
	Message  []byte
	// Ifindex is the interface a refused request came in on, and L2 its
	// link-layer header as it came (Ethernet, VLAN tags, EtherType), for
	// its answer to leave on that wire; 0 and nil when not known.
	Ifindex uint32
	L2      []byte
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
	out := SIPEvent{
		Kind: ev.Kind, Agent: ev.Agent, Code: ev.Code, Sent: ev.Sent == 1, CallID: ev.Callid,
		Src: netip.AddrPortFrom(addr(ev.Saddr), ev.Sport), Dst: netip.AddrPortFrom(addr(ev.Daddr), ev.Dport),
		Message: append([]byte(nil), ev.Data[:ev.Len]...),
	}
	if ev.Ifindex != 0 && ev.L2len >= 14 && int(ev.L2len) <= len(ev.L2) {
		out.Ifindex, out.L2 = ev.Ifindex, append([]byte(nil), ev.L2[:ev.L2len]...)
	}
	return out, nil
}

// ResetAgents empties the last-request stamp and the buckets of the agents
// at idx, whose place a different agent took.
func ResetAgents(seen, buckets, connections *ebpf.Map, idx []uint32) error {
	for _, i := range idx {
		if err := seen.Update(i, uint64(0), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("reset session agent %d: %w", i, err)
		}
		for _, m := range []*ebpf.Map{buckets, connections} {
			if m == nil { // an attachment of a version without connections
				continue
			}
			if err := m.Update(i, bpf.XdpCacBucket{}, ebpf.UpdateAny); err != nil {
				return fmt.Errorf("reset session agent %d: %w", i, err)
			}
		}
	}
	return nil
}

// WriteAgentState tells the egress program whether agent i is out of
// service in every realm (docs/design.md, "Egress admission").
func WriteAgentState(m *ebpf.Map, i uint32, out bool) error {
	var v uint32
	if out {
		v = uint32(bpf.XdpCacAgentStateAGENT_OUT_OF_SERVICE)
	}
	if err := m.Update(i, v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write state of session agent %d: %w", i, err)
	}
	return nil
}

// ReadAgentStates reads which of the first n agents the egress program
// holds out of service.
func ReadAgentStates(m *ebpf.Map, n int) ([]bool, error) {
	out := make([]bool, n)
	for i := range out {
		var v uint32
		if err := m.Lookup(uint32(i), &v); err != nil {
			return nil, fmt.Errorf("read state of session agent %d: %w", i, err)
		}
		out[i] = v&uint32(bpf.XdpCacAgentStateAGENT_OUT_OF_SERVICE) != 0
	}
	return out, nil
}

// EgressCounts are the egress program's counters of one agent, summed over
// the CPUs: INVITE transactions sent toward it, their retransmissions
// (passed uncharged), the INVITEs refused on its behalf by reason, those
// it would have refused but could not hand up, which went on, and the
// server's ACKs of the answers given on its behalf, dropped.
type EgressCounts struct {
	Invites, Retransmits uint64
	Refused              [cac.NumEgressReasons]uint64
	Unanswered, ACKs     uint64
}

// ReadEgressCounts reads the egress counters of the first n agents.
func ReadEgressCounts(m *ebpf.Map, n int) ([]EgressCounts, error) {
	out := make([]EgressCounts, n)
	for i := range out {
		var per []bpf.XdpCacEgressCounts
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, fmt.Errorf("read egress counters of session agent %d: %w", i, err)
		}
		for _, c := range per {
			out[i].Invites += c.Invites
			out[i].Retransmits += c.Retransmits
			out[i].Unanswered += c.Unanswered
			out[i].ACKs += c.Acks
			for r := range out[i].Refused {
				out[i].Refused[r] += c.Refused[r]
			}
		}
	}
	return out, nil
}
