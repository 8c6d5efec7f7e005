package bench

import (
	"math"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
)

// What each step of a denial costs alone: floorProg with, before its drop
// of an IPv4 SIP datagram, the lookups access_check makes (bpf/access.h),
// in maps of the same kinds and key sizes as xdp_cac's, each holding the
// flooded source. BenchmarkFastPathDenied times them beside xdp_cac.
const (
	stepLPM    = iota // the access_list trie, key ::ffff:source/128
	stepHash          // the denied LRU hash, key {family, address}
	stepClock         // stepHash and the coarse clock (now_ns)
	stepAtomic        // stepClock and an atomic add to the value found
)

// floorStepProg is floorProg that, for IPv4 SIP, makes step's lookups of
// the source first; a source found or not, the frame is dropped.
func floorStepProg(b testing.TB, step int, src netip.Prefix) *ebpf.Program {
	b.Helper()
	newMap := func(spec *ebpf.MapSpec) *ebpf.Map {
		m, err := ebpf.NewMap(spec)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	a := src.Addr().As4()
	var m *ebpf.Map
	if step == stepLPM {
		m = newMap(&ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 20, ValueSize: 4, MaxEntries: 1024, Flags: 1}) // BPF_F_NO_PREALLOC
		k := bpf.XdpCacPrefix{Prefixlen: uint32(96 + src.Bits())}
		k.Addr[10], k.Addr[11] = 0xff, 0xff
		copy(k.Addr[12:], a[:])
		if err := m.Put(&k, uint32(1)); err != nil {
			b.Fatal(err)
		}
	} else {
		m = newMap(&ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 24, ValueSize: 32, MaxEntries: 65536})
		k := bpf.XdpCacDenyKey{Family: 4}
		copy(k.Addr[:], a[:])
		if err := m.Put(&k, &bpf.XdpCacDenied{UntilNs: math.MaxUint64}); err != nil {
			b.Fatal(err)
		}
	}
	insns := asm.Instructions{
		// R2 data, R4 the UDP header: the IPv4 source is at data+26.
		asm.LoadMem(asm.R6, asm.R2, 14+12, asm.Word).WithSymbol("step"),
	}
	for off := int16(-24); off < 0; off += 4 {
		insns = append(insns, asm.StoreImm(asm.RFP, off, 0, asm.Word))
	}
	if step == stepLPM {
		insns = append(insns,
			asm.StoreImm(asm.RFP, -24, 128, asm.Word),
			asm.StoreImm(asm.RFP, -12, -0x10000, asm.Word), // bytes 0, 0, ff, ff
			asm.StoreMem(asm.RFP, -8, asm.R6, asm.Word),
		)
	} else {
		insns = append(insns,
			asm.StoreImm(asm.RFP, -24, 4, asm.Word),
			asm.StoreMem(asm.RFP, -16, asm.R6, asm.Word),
		)
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -24),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
	)
	if step >= stepClock {
		insns = append(insns,
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.FnKtimeGetCoarseNs.Call(),
			asm.LoadMem(asm.R1, asm.R7, 8, asm.DWord), // until_ns
			asm.JGE.Reg(asm.R0, asm.R1, "drop"),
		)
	}
	if step == stepAtomic {
		add := asm.StoreXAdd(asm.R7, asm.R1, asm.DWord)
		add.Offset = 16 // frames
		insns = append(insns, asm.Mov.Imm(asm.R1, 1), add)
	}
	insns = append(insns, asm.Ja.Label("drop"))
	return xdpProg(b, "rcv_floor_step", append(floorParse("drop", "drop", "step"), insns...))
}
