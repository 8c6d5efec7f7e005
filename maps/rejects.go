package maps

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
)

// Reject is the record of one source's rejects of one class for one
// reason within one second (docs/design.md, "Reject records").
type Reject struct {
	Second  uint64 // the second of the fast path's clock it counts
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
	// RuleKind and Account: the cli or called rule whose account held
	// the request, by the account's index (RuleKind 0: none, or a source
	// prefix's); Rule names it, as NameRules finds it in force.
	RuleKind policy.RuleKind
	Account  uint32
	Rule     string
}

// sourceOthers is CAC_SOURCE_OTHERS: the record of rejects from sources that
// got no record of their own, when a CPU had made its new records for the
// second (bpf/reject.h).
const sourceOthers = uint8(bpf.XdpCacRejectRecordCAC_SOURCE_OTHERS)

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

// RejectOf converts a record from the kernel's layout. The second is the
// value's: a record a version before the second was in the key left
// has 0 there.
func RejectOf(k bpf.XdpCacRejectKey, r bpf.XdpCacReject) Reject {
	return Reject{
		Second: r.Second, Class: cac.Class(k.Source.Class), Reason: cac.Reason(k.Reason), Source: SourceString(k.Source),
		Count: r.Count, FirstNS: r.FirstNs, LastNS: r.LastNs, Ifindex: r.Ifindex,
		RuleKind: policy.RuleKind(k.Rule), Account: uint32(k.Account),
	}
}

// NameRules names the rule of each record of a cli or called account
// ("cli +4420"), by the account's index among the rules of the slot in
// force: an index an apply has since given another rule names that one.
// A record whose index no rule in force has keeps its kind alone.
func NameRules(pm PolicyMaps, recs []Reject) error {
	var word uint32
	if err := pm.Slot.Lookup(uint32(0), &word); err != nil {
		return fmt.Errorf("read policy slot: %w", err)
	}
	rules, err := readUserAccounts(pm.UserAccounts[wordSlot(word)])
	if err != nil {
		return err
	}
	byIndex := map[uint32]policy.Rule{}
	for r, idx := range rules {
		byIndex[idx.Account] = r
	}
	for i := range recs {
		r := &recs[i]
		if r.RuleKind == policy.RuleSource {
			continue
		}
		if rule, ok := byIndex[r.Account]; ok && rule.Kind == r.RuleKind {
			r.Rule = rule.String()
		} else {
			r.Rule = r.RuleKind.String()
		}
	}
	return nil
}

// cpuRecords merges the records each CPU keeps of one source, class,
// reason and second into one record (bpf/reject.h), in the order the first
// of each came.
type cpuRecords struct {
	out []Reject
	at  map[bpf.XdpCacRejectKey]int
}

func (c *cpuRecords) add(k bpf.XdpCacRejectKey, r bpf.XdpCacReject) {
	k.Cpu = 0
	i, ok := c.at[k]
	if !ok {
		if c.at == nil {
			c.at = map[bpf.XdpCacRejectKey]int{}
		}
		c.at[k] = len(c.out)
		c.out = append(c.out, RejectOf(k, r))
		return
	}
	m := &c.out[i]
	m.Count += r.Count
	m.FirstNS = min(m.FirstNS, r.FirstNs)
	m.LastNS = max(m.LastNS, r.LastNs)
}

// ReadRejects returns the records the rejects table holds: those of the
// seconds the daemon has not taken out yet, the current one included,
// each CPU's records of a key merged into one.
func ReadRejects(m *ebpf.Map) ([]Reject, error) {
	var recs cpuRecords
	var k bpf.XdpCacRejectKey
	var r bpf.XdpCacReject
	it := m.Iterate()
	for it.Next(&k, &r) {
		recs.add(k, r)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read rejects: %w", err)
	}
	return recs.out, nil
}

// RejectFinished reports whether the fast path is done with the records of
// second at now (ns of its clock): it adds only to the record of the
// second it read from the clock, and a run that read it just before a
// boundary ended long before the next one. So a second is finished once
// the one after it is over too.
func RejectFinished(second, now uint64) bool { return second+2 <= now/1_000_000_000 }

// SweepRejects takes the records of finished seconds out of the table and
// returns them, each once: a record is looked up and deleted in one step,
// so it is either in the table or in what this returns, never in both. A
// second's records of one key from several CPUs come back as one.
// now is the fast path's clock (control.MonotonicCoarse; a test's clock
// for a program loaded with one). all takes every record, the current
// second's too: only for a table no program writes to any more.
func SweepRejects(m *ebpf.Map, now uint64, all bool) ([]Reject, error) {
	// Keys first, then the deletes: deleting while iterating would restart
	// the walk.
	var keys []bpf.XdpCacRejectKey
	var k bpf.XdpCacRejectKey
	var r bpf.XdpCacReject
	it := m.Iterate()
	for it.Next(&k, &r) {
		// A version that kept the second in the value alone left 0 in
		// the key: such a record is finished, as no program adds to it.
		if all || RejectFinished(uint64(k.Second), now) {
			keys = append(keys, k)
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("sweep rejects: %w", err)
	}
	var recs cpuRecords
	for _, k := range keys {
		if err := m.LookupAndDelete(&k, &r); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue // another sweeper took it
			}
			return recs.out, fmt.Errorf("sweep rejects: %w", err)
		}
		recs.add(k, r)
	}
	return recs.out, nil
}
