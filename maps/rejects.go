package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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

// RejectTables are the maps an attachment counts its rejects in
// (bpf/reject.h): the table, each CPU's slots, and the last second of the
// slots the daemon has read. Slots and Swept are nil in the pins of a
// version before the slots.
type RejectTables struct {
	Records, Slots, Swept *ebpf.Map
}

// RejectTablesOf are the reject maps of an attachment's maps.
func RejectTablesOf(m *bpf.XdpMaps) RejectTables {
	return RejectTables{Records: m.Rejects, Slots: m.RejectSlots, Swept: m.RejectSwept}
}

// RejectSlot is the slot of a CPU's reject_slots a record of k is counted
// in: bpf/reject.h's reject_slot_of, the key's little-endian words each
// multiplied by a constant of its own and folded with xor.
func RejectSlot(k bpf.XdpCacRejectKey) uint32 {
	b, err := binary.Append(nil, binary.LittleEndian, k)
	if err != nil {
		panic(err) // a fixed-size struct always encodes
	}
	var h uint32
	for i := 0; i+4 <= len(b); i += 4 {
		h ^= binary.LittleEndian.Uint32(b[i:]) * (0x9e3779b1 + 2*uint32(i/4))
	}
	return h >> 16 & (uint32(bpf.XdpCacRejectRecordCAC_REJECT_SLOTS) - 1)
}

// swept is the last second whose slots the daemon has read.
func (t RejectTables) swept() (uint64, error) {
	var s uint64
	if t.Swept == nil {
		return 0, nil
	}
	if err := t.Swept.Lookup(uint32(0), &s); err != nil {
		return 0, fmt.Errorf("read the swept second of the reject slots: %w", err)
	}
	return s, nil
}

// eachSlot calls fn with every CPU's record in every slot that holds one
// of a second after swept and not after through.
func (t RejectTables) eachSlot(swept, through uint64, fn func(bpf.XdpCacRejectKey, bpf.XdpCacReject)) error {
	if t.Slots == nil {
		return nil
	}
	var i uint32
	var cpus []bpf.XdpCacRejectScratch
	it := t.Slots.Iterate()
	for it.Next(&i, &cpus) {
		for _, s := range cpus {
			if s.Rec.Count > 0 && s.Rec.Second > swept && s.Rec.Second <= through {
				fn(s.Key, s.Rec)
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read the reject slots: %w", err)
	}
	return nil
}

// ReadRejects returns the records the tables hold: those of the seconds
// the daemon has not taken out yet, the current one included, each CPU's
// records of a key merged into one.
func ReadRejects(t RejectTables) ([]Reject, error) {
	var recs cpuRecords
	swept, err := t.swept()
	if err != nil {
		return nil, err
	}
	if err := t.eachSlot(swept, math.MaxUint64, recs.add); err != nil {
		return nil, err
	}
	keys, vals, err := readRecords[bpf.XdpCacRejectKey, bpf.XdpCacReject](t.Records)
	if err != nil {
		return nil, fmt.Errorf("read rejects: %w", err)
	}
	for i := range keys {
		recs.add(keys[i], vals[i])
	}
	return recs.out, nil
}

// RejectFinished reports whether the fast path is done with the records of
// second at now (ns of its clock): it adds only to the record of the
// second it read from the clock, and a run that read it just before a
// boundary ended long before the next one. So a second is finished once
// the one after it is over too.
func RejectFinished(second, now uint64) bool { return second+2 <= now/1_000_000_000 }

// SweepRejects takes the records of finished seconds out of the tables
// and returns them, each once, a second's records of one key from several
// CPUs as one. A record of the table is looked up and deleted in one
// step, so it is either in the table or in what this returns, never in
// both. The slots are read, and the last second read written to
// reject_swept after them: the fast path writes over a slot only once
// its second is there, so no slot is read twice nor written over unread.
// One sweeper at a time: the daemon. now is the fast path's clock
// (control.MonotonicCoarse; a test's clock for a program loaded with
// one). all takes every record, the current second's too: only for
// tables no program writes to any more.
func SweepRejects(t RejectTables, now uint64, all bool) ([]Reject, error) {
	var recs cpuRecords
	swept, err := t.swept()
	if err != nil {
		return nil, err
	}
	through := uint64(0)
	if sec := now / 1_000_000_000; sec >= 2 {
		through = sec - 2 // RejectFinished
	}
	last := through
	if all {
		through, last = math.MaxUint64, swept
	}
	if t.Slots != nil && t.Swept != nil && through > swept {
		err := t.eachSlot(swept, through, func(k bpf.XdpCacRejectKey, r bpf.XdpCacReject) {
			recs.add(k, r)
			last = max(last, r.Second)
		})
		if err != nil {
			return nil, err
		}
		if last > swept {
			if err := t.Swept.Update(uint32(0), last, ebpf.UpdateAny); err != nil {
				return nil, fmt.Errorf("write the swept second of the reject slots: %w", err)
			}
		}
	}
	// Read in batches, then the finished records deleted in one: a
	// finished record is added to by no program (RejectFinished), so
	// what was read is what is deleted, and the caller's lock keeps a
	// reader from seeing it in both places.
	keys, vals, err := readRecords[bpf.XdpCacRejectKey, bpf.XdpCacReject](t.Records)
	if err != nil {
		return recs.out, fmt.Errorf("sweep rejects: %w", err)
	}
	var done []bpf.XdpCacRejectKey
	for i, k := range keys {
		// A version that kept the second in the value alone left 0 in
		// the key: such a record is finished, as no program adds to it.
		if all || RejectFinished(uint64(k.Second), now) {
			done = append(done, k)
			recs.add(k, vals[i])
		}
	}
	if err := deleteRecords(t.Records, done); err != nil {
		return recs.out, fmt.Errorf("sweep rejects: %w", err)
	}
	return recs.out, nil
}

// recordBatch is how many records one batch of the table's system calls
// carries.
const recordBatch = 1024

// readRecords reads every entry of a hash table, a batch of them a system
// call: a storm's thousands of records in a few calls, where a walk takes
// two a record and held up show rejects for a tenth of a second
// (BENCHMARKS.md, "The rejects journal in a storm"). A kernel without
// batches is walked.
func readRecords[K, V any](m *ebpf.Map) ([]K, []V, error) {
	var keys []K
	var vals []V
	kb, vb := make([]K, recordBatch), make([]V, recordBatch)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, kb, vb, nil)
		keys, vals = append(keys, kb[:n]...), append(vals, vb[:n]...)
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return keys, vals, nil
		case errors.Is(err, ebpf.ErrNotSupported):
			return walkRecords[K, V](m)
		case err != nil:
			return nil, nil, err
		}
	}
}

func walkRecords[K, V any](m *ebpf.Map) ([]K, []V, error) {
	var keys []K
	var vals []V
	var k K
	var r V
	it := m.Iterate()
	for it.Next(&k, &r) {
		keys, vals = append(keys, k), append(vals, r)
	}
	return keys, vals, it.Err()
}

// deleteRecords deletes keys from a hash table in batches; a key already
// gone stops a batch, and the rest are deleted one by one.
func deleteRecords[K any](m *ebpf.Map, keys []K) error {
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), recordBatch)]
		n, err := m.BatchDelete(chunk, nil)
		if err == nil {
			keys = keys[len(chunk):]
			continue
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) && !errors.Is(err, ebpf.ErrNotSupported) {
			return err
		}
		for _, k := range chunk[n:] {
			if err := m.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return err
			}
		}
		keys = keys[len(chunk):]
	}
	return nil
}
