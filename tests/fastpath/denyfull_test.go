package fastpath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/access"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The deny table full (docs/design.md, "Auto-deny"): a million sources
// each earn their denial, one a turn but every honestEvery-th turn,
// whose source is refused fewer times in the window than it takes.
const (
	denyTable    = 65_536
	denySources  = 1_000_000
	honestEvery  = 16
	groupNS      = 1_000_000                // the clock moves 1 ms a group of honestEvery turns
	denySlotNS   = 10_000_000               // within 80 ms
	windowGroups = 8 * denySlotNS / groupNS // groups later, the honest source's refusal is out of the window
)

// denyFullSource is turn n's source: host h of a /64 of the
// documentation prefix, n in its 32 bits after 2001:db8::/32. An honest
// source's /64 is next to those of sources denied, in the same /48.
func denyFullSource(n uint32, h byte) [16]byte {
	a := netip.MustParseAddr("2001:db8::").As16()
	binary.BigEndian.PutUint32(a[4:], n)
	a[15] = h
	return a
}

// turnOf is the turn whose /64 a deny key holds, and whether the key is
// that /64 and nothing else.
func turnOf(k bpf.XdpCacDenyKey) (uint32, bool) {
	want := denyFullSource(binary.BigEndian.Uint32(k.Addr[4:8]), 0)
	return binary.BigEndian.Uint32(k.Addr[4:8]), k.Family == 6 && k.Addr == want
}

func honestTurn(n uint32) bool { return n%honestEvery == honestEvery-1 }

// TestDenyTableFull: 1,000,000 sources auto-denied into a deny table of
// 65,536. Each opens one connection its per-source bucket admits and
// two it refuses (refused 2), and is then dropped as denied, by a host
// of its /64 it never sent from; a source refused once in the window,
// and once more after the window, is never denied. The table holds at
// most its size, and only sources that earned it; the fast path counts
// each source it denied once; the least recently denied are evicted
// (counted: added less held) and no longer dropped, a release before
// deny-for; the most recently denied are held.
func TestDenyTableFull(t *testing.T) {
	start := time.Now()
	f := harness.NewFastPathWith(t, false, func(s *ebpf.CollectionSpec) {
		s.Maps[bpf.XdpMapDenied].MaxEntries = denyTable
		s.Maps[bpf.XdpMapDenyCounts].MaxEntries = denyTable
	})
	var p policy.Policy
	p.PerSource[cac.SIPConnect] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	f.SetPolicy(t, p)
	set := access.Settings{SlotNS: denySlotNS, DenyForNS: 3600 * second, Refused: 2, IPv6Prefix: 64}
	f.SetAccess(t, access.Lists{}, set)

	// One frame, its source patched in place from turn to turn.
	first := denyFullSource(0xfffffff0, 1)
	frame := Frame(Ether{}, IPv6{Src: netip.AddrFrom16(first), Next: 6}, tcpSegment(40000, 5061, tcpSYN, 0))
	at := bytes.Index(frame, first[:])
	if at < 0 {
		t.Fatal("no source in the frame")
	}
	// Frames run one at a time: Repeat above 1 swaps the program into
	// the kernel's XDP dispatcher and back, most of a millisecond a run,
	// and a run a signal interrupts is run again whole, more frames
	// than asked (enough to deny an honest source).
	opts := &ebpf.RunOptions{Data: frame}
	run := func(n uint32, host byte, frames int) cac.Verdict {
		t.Helper()
		a := denyFullSource(n, host)
		copy(frame[at:], a[:])
		var ret uint32
		for range frames {
			var err error
			if ret, err = f.Objs.XdpCac.Run(opts); err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
		}
		return cac.Verdict(ret)
	}
	base := 1000 * second
	clock := func(n uint32) uint64 { return base + uint64(n/honestEvery)*groupNS }

	var denied, honest uint32
	n := uint32(0)
	for ; denied < denySources; n++ {
		if n%honestEvery == 0 {
			f.MustAt(t, clock(n))
		}
		// An honest source of windowGroups groups ago is refused again:
		// once in this window, so never denied.
		if back := uint32(windowGroups * honestEvery); n >= back && honestTurn(n-back) {
			a := denyFullSource(n-back, 2)
			copy(frame[at:], a[:])
			var c bpf.XdpCacDenyCount
			k := bpf.XdpCacDenyKey{Family: 6, Addr: denyFullSource(n-back, 0)}
			// Its refusal is still counted, a window old: the window, not
			// an eviction, lets it go.
			if err := f.Objs.DenyCounts.Lookup(&k, &c); err != nil || c.Tick != clock(n-back)/denySlotNS {
				t.Fatalf("honest source of turn %d: refusals %+v (%v), want its one of tick %d", n-back, c, err, clock(n-back)/denySlotNS)
			}
			if d, err := f.Run(frame); err != nil || !d.Rejected || d.Denied != access.None {
				t.Fatalf("honest source of turn %d, a window later at %d: %v (%v), want refused", n-back, clock(n), d, err)
			}
			var d bpf.XdpCacDenied
			if err := f.Objs.Denied.Lookup(&k, &d); !errors.Is(err, ebpf.ErrKeyNotExist) {
				t.Fatalf("honest source of turn %d, refused once a window (refusals %+v before): denied %+v (%v)", n-back, c, d, err)
			}
		}
		if honestTurn(n) { // admitted, then refused once
			if v := run(n, 1, 2); v != cac.Drop {
				t.Fatalf("honest source of turn %d: %v, want refused", n, v)
			}
			honest++
			continue
		}
		// Admitted, refused, refused: denied.
		if v := run(n, 1, 3); v != cac.Drop {
			t.Fatalf("turn %d: %v, want refused", n, v)
		}
		denied++
		if n%4096 != 0 {
			if v := run(n, 2, 1); v != cac.Drop {
				t.Fatalf("turn %d, another host of the /64: %v, want denied", n, v)
			}
			continue
		}
		a := denyFullSource(n, 3)
		copy(frame[at:], a[:])
		if d, err := f.Run(frame); err != nil || d.Denied != access.Auto {
			t.Fatalf("turn %d, another host of the /64: %v (%v), want denied", n, d, err)
		}
	}
	turns := n
	t.Logf("%d turns (%d sources denied, %d honest) in %v", turns, denied, honest, time.Since(start))

	st := f.Stats(t)
	if st.DenyAdded != denySources {
		t.Errorf("deny_added %d, want %d: one a source that earned it", st.DenyAdded, denySources)
	}
	// Every source denied dropped one frame as denied; no honest one.
	if st.DeniedAuto != denySources {
		t.Errorf("denied_auto %d, want %d", st.DeniedAuto, denySources)
	}

	// The table: at most its size, every entry a source that earned it,
	// with the refusals that did and deny-for from then.
	held := map[uint32]bool{}
	var k bpf.XdpCacDenyKey
	var d bpf.XdpCacDenied
	it := f.Objs.Denied.Iterate()
	for it.Next(&k, &d) {
		n, ok := turnOf(k)
		switch {
		case !ok:
			t.Fatalf("deny table holds %x/%d, no source of the test's /64s", k.Addr, k.Family)
		case n >= turns || honestTurn(n):
			t.Fatalf("deny table holds turn %d's /64, which never earned it (honest %v)", n, honestTurn(n))
		case d.Refusals != 2 || d.SinceNs != clock(n) || d.UntilNs != clock(n)+set.DenyForNS:
			t.Fatalf("turn %d: %+v, want 2 refusals since %d for %d", n, d, clock(n), set.DenyForNS)
		}
		held[n] = true
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(held) > denyTable {
		t.Fatalf("deny table holds %d sources, more than its %d", len(held), denyTable)
	}
	// In a run of the fast path alone nothing deletes from the table:
	// every source added and not held was evicted. (The daemon's
	// xdpcac_denied_evicted_total balances the same, less the sources
	// it took out itself.)
	evicted := st.DenyAdded - uint64(len(held))
	t.Logf("held %d of %d, evicted %d", len(held), denyTable, evicted)

	// The kernel's LRU is approximate (it frees entries a batch at a
	// time, into a list per CPU): of the last table's worth a few
	// hundred may be out, of the last half none.
	recent, tail, missing := 0, 0, []uint32{}
	for m := turns; m > 0 && tail < denyTable; m-- {
		if honestTurn(m - 1) {
			continue
		}
		tail++
		if held[m-1] {
			recent++
		} else if tail <= denyTable/2 {
			missing = append(missing, m-1)
		}
	}
	t.Logf("of the %d most recently denied, %d held", tail, recent)
	if len(missing) > 0 {
		t.Errorf("%d of the %d most recently denied are not held, the most recent turn %d", len(missing), denyTable/2, missing[0])
	}

	// The least recently denied were evicted: released before deny-for,
	// their frames are the classifier's again.
	checked := 0
	for m := uint32(0); m < turns && checked < 1000; m++ {
		if honestTurn(m) || held[m] {
			continue
		}
		checked++
		var k bpf.XdpCacDenyKey
		k.Family, k.Addr = 6, denyFullSource(m, 0)
		if err := f.Objs.Denied.Lookup(&k, &d); !errors.Is(err, ebpf.ErrKeyNotExist) {
			t.Fatalf("turn %d: not iterated, but looked up: %v", m, err)
		}
		a := denyFullSource(m, 4)
		copy(frame[at:], a[:])
		if d, err := f.Run(frame); err != nil || d.Denied != access.None || d.Rejected {
			t.Fatalf("turn %d, evicted: %v (%v), want admitted", m, d, err)
		}
	}
	if checked < 1000 {
		t.Errorf("only %d sources evicted", checked)
	}
	t.Logf("whole test %v", time.Since(start))
}

// TestDenyTableFullMemory: the kernel's charge for the deny table and
// its refusal counts at the default size is what docs/configuration.md
// says of access.auto-deny.table, a source and in all, and its figure
// at the largest size follows from the one a source: both maps are
// preallocated, so their charge is their size's, full or empty.
func TestDenyTableFullMemory(t *testing.T) {
	testenv.RequireBPF(t)
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `access.auto-deny.table` \\|.*$").Find(doc)
	said := regexp.MustCompile(`(\d+) bytes a source \((\d+) for the deny table, (\d+) for its refusal counts\), ([\d.]+) MiB at the default and ([\d,]+) MiB at 4,194,304`).FindSubmatch(row)
	if said == nil {
		t.Fatalf("docs/configuration.md, access.auto-deny.table says no memory in the form the test reads:\n%s", row)
	}
	num := func(b []byte) float64 {
		v, err := strconv.ParseFloat(strings.ReplaceAll(string(b), ",", ""), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	perSource, perDenied, perCount, atDefault, atMax := num(said[1]), num(said[2]), num(said[3]), num(said[4]), num(said[5])

	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	near := func(what string, said, want float64, tolerance float64) {
		t.Helper()
		if math.Abs(said-want) > tolerance {
			t.Errorf("%s: the docs say %.1f, want %.1f", what, said, want)
		}
	}
	// The figures agree with each other.
	near("both, bytes a source", perSource, perDenied+perCount, 0)
	near("both at 65,536, MiB", atDefault, perSource*denyTable/mib, 0.05)
	near("both at 4,194,304, MiB", atMax, perSource*4_194_304/mib, 0.5)

	// And with the kernel's charge.
	var measured [2]float64
	estimate := true
	for i, name := range []string{bpf.XdpMapDenied, bpf.XdpMapDenyCounts} {
		ms := spec.Maps[name].Copy()
		ms.MaxEntries = denyTable // as the loader sizes both
		m, err := ebpf.NewMap(ms)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		measured[i] = float64(harness.Memlock(t, m))
		m.Close()
		// Before Linux 6.4 fdinfo's memlock is an estimate from the
		// key and value alone, short of the hash table's own
		// elements and buckets.
		kv := uint64(ms.KeySize+ms.ValueSize+7) &^ 7
		estimate = estimate && measured[i] == float64((denyTable*kv+4095)&^4095)
	}
	if estimate {
		t.Logf("this kernel's memlock is the estimate of keys and values (%.0f and %.0f bytes), not the maps' charge: the docs' figures are not measured here", measured[0], measured[1])
		return
	}
	near("deny table, bytes a source", perDenied, measured[0]/denyTable, 1)
	near("refusal counts, bytes a source", perCount, measured[1]/denyTable, 1)
	t.Logf("at %d: deny table %.0f bytes, refusal counts %.0f bytes", denyTable, measured[0], measured[1])
}
