package maps

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
	"golang.org/x/sys/unix"
)

// Leases is the leases map (bpf/lease.h) mapped into this process's
// memory, so that a grant and an expiry are atomics on the words the fast
// path spends from: neither side's write is ever lost, and nothing the
// fast path admits was not granted.
type Leases struct {
	mem []byte
}

// leaseSize is the size of struct cac_lease: tokens, short_calls, then
// expires_ns.
const leaseSize = int(unsafe.Sizeof(bpf.XdpCacLease{}))

// MapLeases maps the leases map. Close unmaps it.
func MapLeases(m *ebpf.Map) (*Leases, error) {
	if m.ValueSize() != uint32(leaseSize) || m.MaxEntries() != uint32(policy.MaxLeases) {
		return nil, fmt.Errorf("leases map holds %d values of %d bytes, want %d of %d", m.MaxEntries(), m.ValueSize(), policy.MaxLeases, leaseSize)
	}
	mem, err := unix.Mmap(m.FD(), 0, leaseSize*policy.MaxLeases, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map leases into memory: %w", err)
	}
	return &Leases{mem: mem}, nil
}

// Close unmaps the leases; the map and its tokens stay.
func (l *Leases) Close() error {
	if l.mem == nil {
		return nil
	}
	err := unix.Munmap(l.mem)
	l.mem = nil
	if err != nil {
		return fmt.Errorf("unmap leases: %w", err)
	}
	return nil
}

// tokens and short are the two words of lease i: the map's memory is
// page-aligned and each value 16 bytes, so both are aligned for atomics.
func (l *Leases) tokens(i uint32) *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&l.mem[int(i)*leaseSize]))
}

func (l *Leases) short(i uint32) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&l.mem[int(i)*leaseSize+8]))
}

func (l *Leases) expires(i uint32) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&l.mem[int(i)*leaseSize+16]))
}

// Grant adds n granted tokens to lease i, which live until expiresNS on
// the fast path's clock (control.MonotonicCoarse): the fast path spends
// none of the lease's tokens after the lifetime of its newest grant, so
// a lease no daemon expires any more (stopped, dead) runs out by itself.
// An expiry earlier than the one in force leaves that one.
func (l *Leases) Grant(i uint32, n int64, expiresNS uint64) {
	w := l.expires(i)
	for {
		was := w.Load()
		if was >= expiresNS || w.CompareAndSwap(was, expiresNS) {
			break
		}
	}
	l.tokens(i).Add(n)
}

// Expires is when the fast path stops spending the tokens of lease i, on
// its clock; 0 before any grant.
func (l *Leases) Expires(i uint32) uint64 { return l.expires(i).Load() }

// Expire takes back up to n of the tokens lease i holds, and returns how
// many it took: none that a call is spending at the moment, so an expiry
// never takes a token twice.
func (l *Leases) Expire(i uint32, n int64) int64 {
	w := l.tokens(i)
	for {
		have := w.Load()
		take := min(n, have)
		if take <= 0 {
			return 0
		}
		if w.CompareAndSwap(have, have-take) {
			return take
		}
	}
}

// Tokens is what lease i holds; Short is how many calls it has refused
// for want of tokens since the map was made.
func (l *Leases) Tokens(i uint32) int64 { return l.tokens(i).Load() }
func (l *Leases) Short(i uint32) uint64 { return l.short(i).Load() }

// LeasesInForce is the lease of each of p's fleet limits, by their place
// in p.Fleet, as the policy in force holds them; p must be the policy
// WritePolicy last put in force. A customer none of whose accounts is in
// force has no lease, and is left out: no call can reach it.
func LeasesInForce(pm PolicyMaps, p policy.Policy) (map[int]uint32, error) {
	var word uint32
	if err := pm.Slot.Lookup(uint32(0), &word); err != nil {
		return nil, fmt.Errorf("read policy slot: %w", err)
	}
	rules, err := readRules(pm, wordSlot(word))
	if err != nil {
		return nil, err
	}
	ix := policy.Indexes{Accounts: make([]uint32, len(p.Accounts)), Customers: make([]uint32, len(p.Customers))}
	acctIn, custIn := make([]bool, len(p.Accounts)), make([]bool, len(p.Customers))
	for i, a := range p.Accounts {
		if idx, ok := rules[a.Rule()]; ok {
			ix.Accounts[i], ix.Customers[a.Customer] = idx.Account, idx.Customer
			acctIn[i], custIn[a.Customer] = true, true
		}
	}
	out := map[int]uint32{}
	for i, f := range p.Fleet {
		if !f.CallAdmission && ((f.Account >= 0 && !acctIn[f.Account]) || (f.Customer >= 0 && !custIn[f.Customer])) {
			continue
		}
		out[i] = f.Lease(ix)
	}
	return out, nil
}
