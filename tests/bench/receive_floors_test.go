package bench

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// What an XDP program returns.
const xdpDrop, xdpPass = 1, 2

// netOrder is a 16-bit field of network order as a little-endian load
// sees it: an Ethertype or a port.
func netOrder(v uint16) int32 { return int32(v>>8 | v<<8&0xff00) }

// etherType loads a frame's data and data_end into R2 and R3 and its
// Ethertype into R5, or goes to "pass" for a frame too short to have one.
func etherType() asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
	}
}

// floorProg is the least a filter of these frames must do: Ethernet, then
// PPPoE discovery (dropped), or IPv4 or IPv6 and its extension headers,
// UDP, its destination port, and a drop for 1701 and 5060; anything else
// passes.
func floorProg(b testing.TB) *ebpf.Program {
	return xdpProg(b, "rcv_floor", floorInsns("drop"))
}

// floorReadProg is floorProg that, for SIP (UDP 5060), also loads every
// word of the datagram (up to datagramMax) before it drops the frame:
// what a filter that must see every header of a request reads at the
// least.
func floorReadProg(b testing.TB) *ebpf.Program {
	return xdpProg(b, "rcv_floor_read", floorInsns("read"))
}

// floorLinesProg is floorProg that, for SIP, also finds where the header
// lines start, a word at a time as xdpcac's walk does, and whether each
// line starts with a t (a To header's): less than any filter that finds
// a To header wherever it is must do, for it reads no name past its first
// letter and no value.
func floorLinesProg(b testing.TB) *ebpf.Program {
	return xdpProg(b, "rcv_floor_lines", floorInsns("lines"))
}

// floorInsns is the floor, with what it does for SIP: "drop", "read" or
// "lines".
func floorInsns(sip string) asm.Instructions {
	insns := floorParse("drop", "drop", sip)
	switch sip {
	case "drop":
		return insns
	case "lines":
		return append(insns, linesInsns()...)
	}
	// Every word of the datagram folded into R7.
	return append(insns, datagramWords("read", 0, asm.Instructions{
		asm.Xor.Reg(asm.R7, asm.R5),
	})...)
}

// floorParse reads a frame as the floor does and goes to discovery for
// PPPoE discovery, to l2tp for UDP 1701 and to sip for UDP 5060, with the
// UDP header in R4 and data_end in R3 for the last two; anything else
// passes. It ends with the "pass" and "drop" returns. Over IPv6 it walks
// up to 16 extension headers, as parse_ipv6 does: the worst INVITE has
// all 16, and a floor that skipped them would pass it to the stack.
func floorParse(discovery, l2tp, sip string) asm.Instructions {
	insns := append(etherType(),
		asm.JEq.Imm(asm.R5, netOrder(0x8863), discovery),
		asm.JEq.Imm(asm.R5, netOrder(0x86dd), "v6"),
		asm.JNE.Imm(asm.R5, netOrder(0x0800), "pass"),
		// IPv4: the protocol, the header length, then the UDP header.
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14+20),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14+9, asm.Byte),
		asm.JNE.Imm(asm.R5, 17, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14, asm.Byte),
		asm.And.Imm(asm.R5, 0x0f),
		asm.LSh.Imm(asm.R5, 2),
		asm.JLT.Imm(asm.R5, 20, "pass"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.Add.Reg(asm.R4, asm.R5), // the UDP header
		asm.Ja.Label("udp"),
		// IPv6: the next header, at most 16 extension headers (hop-by-hop,
		// routing, fragment, destination options: each its length), then
		// the UDP header.
		asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("v6"),
		asm.Add.Imm(asm.R4, 14+40),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14+6, asm.Byte),
	)
	for i := range worstExtHeaders {
		ext := fmt.Sprintf("ext%d", i)
		insns = append(insns,
			asm.JEq.Imm(asm.R5, 17, "udp"),
			asm.JEq.Imm(asm.R5, 0, ext),
			asm.JEq.Imm(asm.R5, 43, ext),
			asm.JEq.Imm(asm.R5, 60, ext),
			// A fragment header is 8 bytes, and its second byte (reserved)
			// is 0, so the length below comes to 8 for it too.
			asm.JNE.Imm(asm.R5, 44, "pass"),
			asm.Mov.Reg(asm.R0, asm.R4).WithSymbol(ext),
			asm.Add.Imm(asm.R0, 8),
			asm.JGT.Reg(asm.R0, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R4, 0, asm.Byte),
			asm.LoadMem(asm.R0, asm.R4, 1, asm.Byte),
			asm.Add.Imm(asm.R0, 1),
			asm.LSh.Imm(asm.R0, 3),
			asm.Add.Reg(asm.R4, asm.R0),
		)
	}
	return append(insns,
		asm.JNE.Imm(asm.R5, 17, "pass"),
		asm.Mov.Reg(asm.R5, asm.R4).WithSymbol("udp"),
		asm.Add.Imm(asm.R5, 8),
		asm.JGT.Reg(asm.R5, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		asm.JEq.Imm(asm.R5, netOrder(1701), l2tp),
		asm.JEq.Imm(asm.R5, netOrder(5060), sip),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("drop"),
		asm.Return(),
	)
}

// datagramWords is a SIP floor's loop, from R4 the UDP header: at most
// datagramMax bytes of the datagram, a word at a time, each loaded into
// R5 for body while it and ahead bytes after it are in the frame, body's
// findings kept in R7, which is tested at the end so that none of it can
// be left out. body may use R0, R1, R2, R5 and R9.
func datagramWords(name string, ahead int32, body asm.Instructions) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R4).WithSymbol(name),
		asm.Add.Imm(asm.R6, 8),
		asm.Mov.Imm(asm.R7, 0),
		asm.Mov.Imm(asm.R8, 0),
		asm.Mov.Reg(asm.R9, asm.R6).WithSymbol(name + "_word"),
		asm.Add.Imm(asm.R9, 8+ahead),
		asm.JGT.Reg(asm.R9, asm.R3, name+"_end"),
		asm.LoadMem(asm.R5, asm.R6, 0, asm.DWord),
	}
	insns = append(insns, body...)
	return append(insns,
		asm.Add.Imm(asm.R6, 8),
		asm.Add.Imm(asm.R8, 1),
		asm.JLT.Imm(asm.R8, datagramMax/8, name+"_word"),
		asm.JEq.Imm(asm.R7, 0x5a5a, "pass").WithSymbol(name+"_end"),
		asm.Mov.Imm(asm.R0, xdpDrop),
		asm.Return(),
	)
}

// datagramMax is the most of a datagram the SIP floors read: all of the
// largest the testbed sends (the worst INVITE's, rcvMaxFrame in all).
const datagramMax = 4096

// linesInsns is floorLinesProg's part for SIP: of each word of the
// datagram and the word after it, the bytes of the word that are newlines
// (those of w ^ 0x0a.. that are zero) and, of those, the ones the next
// byte of which is a t in either case, or-ed into R7. Without a branch
// that comes back together, so that the verifier walks one path a word.
func linesInsns() asm.Instructions {
	const ones, highs = 0x0101010101010101, -0x7f7f7f7f7f7f7f80 // 0x8080808080808080
	// zeroBytes marks in R0 the zero bytes of R0, with R1 for scratch.
	zeroBytes := asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadImm(asm.R2, ones, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.Xor.Imm(asm.R0, -1),
		asm.And.Reg(asm.R0, asm.R1),
		asm.LoadImm(asm.R2, highs, asm.DWord),
		asm.And.Reg(asm.R0, asm.R2),
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R9, asm.R6, 8, asm.DWord),
		// The newlines of the word, in R0, kept in R9's stead below.
		asm.LoadImm(asm.R0, 0x0a0a0a0a0a0a0a0a, asm.DWord),
		asm.Xor.Reg(asm.R0, asm.R5),
	}
	insns = append(insns, zeroBytes...)
	insns = append(insns,
		// The word one byte on: byte i is the message's byte after i.
		asm.RSh.Imm(asm.R5, 8),
		asm.LSh.Imm(asm.R9, 56),
		asm.Or.Reg(asm.R5, asm.R9),
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.LoadImm(asm.R0, 0x2020202020202020, asm.DWord),
		asm.Or.Reg(asm.R0, asm.R5),
		asm.LoadImm(asm.R2, 0x7474747474747474, asm.DWord),
		asm.Xor.Reg(asm.R0, asm.R2),
	)
	insns = append(insns, zeroBytes...)
	return datagramWords("lines", 8, append(insns,
		asm.And.Reg(asm.R0, asm.R9),
		asm.Or.Reg(asm.R7, asm.R0),
	))
}

// floorGCRAProg is the least any rate limit does with a PADI or an ICRQ
// it refuses: floorProg's parse, then the coarse clock, one bucket's
// theoretical arrival time compared with it (GCRA, as xdpcac and nftables
// keep a limit), and a per-CPU count of the refusal. The bucket's time
// lies far ahead, so every PADI and every datagram to UDP 1701 is
// refused; SIP is dropped as the floor drops it, anything else passes. It
// is the floor of a refused PADI or ICRQ for a filter that keeps a limit
// at all: what xdpcac does beyond it is classifying (an ICRQ's message
// type and AVPs), its levels, and its reject record. The function it
// returns reads how many it refused.
func floorGCRAProg(b testing.TB) (*ebpf.Program, func() uint64) {
	b.Helper()
	newMap := func(typ ebpf.MapType) *ebpf.Map {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close() })
		return m
	}
	bucket, refused := newMap(ebpf.Array), newMap(ebpf.PerCPUArray)
	if err := bucket.Put(uint32(0), uint64(1)<<62); err != nil {
		b.Fatal(err)
	}
	lookup := func(m *ebpf.Map) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
		}
	}
	insns := append(floorParse("gcra", "gcra", "drop"),
		asm.FnKtimeGetCoarseNs.Call().WithSymbol("gcra"),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
	)
	insns = append(insns, lookup(bucket)...)
	insns = append(insns,
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R7, asm.R0, 0, asm.DWord),
		asm.JLE.Reg(asm.R7, asm.R6, "pass"), // conforms: passed
	)
	insns = append(insns, lookup(refused)...)
	counted := func() uint64 {
		var perCPU []uint64
		if err := refused.Lookup(uint32(0), &perCPU); err != nil {
			b.Fatal(err)
		}
		var n uint64
		for _, v := range perCPU {
			n += v
		}
		return n
	}
	return xdpProg(b, "rcv_floor_gcra", append(insns,
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label("drop"),
	)), counted
}

// emptyProg passes every frame.
func emptyProg(b testing.TB) *ebpf.Program {
	return xdpProg(b, "rcv_empty", asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()})
}

func xdpProg(b testing.TB, name string, insns asm.Instructions) *ebpf.Program {
	b.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "MIT", Instructions: insns})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}
