package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// How a spoofing generator changes every frame it sends.
const (
	spoofNone = iota
	spoofWord // 4 random bytes at off
	spoofV4   // a random last byte of the IPv4 source at off (the IP header), checksum kept
)

// ipv4ID is the identification of the IPv4 frames spoofV4 changes, whose
// source's last byte is 1: the generator writes ipv4ID+1-r into the
// identification when it writes r into that byte, so that the sum of the
// two header words, and with it the header checksum, stays the same.
const ipv4ID = 0x1000

// spoofGen is generator (bench_flood_test.go) with the kinds of spoofing
// above. With spin > 0 it counts to spin before it sends each frame, to
// offer a receiver no more than it can take (receive_paced_test.go).
func spoofGen(b *testing.B, ifindex, kind, off, spin int) *ebpf.Program {
	b.Helper()
	end := off + 4
	if kind == spoofV4 {
		end = off + 20
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(end)),
		asm.JGT.Reg(asm.R2, asm.R8, "send"),
		asm.FnGetPrandomU32.Call(),
	}
	switch kind {
	case spoofNone:
		insns = insns[:3]
	case spoofWord:
		insns = append(insns, asm.StoreMem(asm.R7, int16(off), asm.R0, asm.Word))
	case spoofV4:
		insns = append(insns,
			asm.And.Imm(asm.R0, 0xff),
			asm.StoreMem(asm.R7, int16(off+15), asm.R0, asm.Byte), // source, last byte
			asm.Mov.Imm(asm.R1, ipv4ID+1),
			asm.Sub.Reg(asm.R1, asm.R0),
			asm.StoreMem(asm.R7, int16(off+5), asm.R1, asm.Byte), // identification, low byte
			asm.RSh.Imm(asm.R1, 8),
			asm.StoreMem(asm.R7, int16(off+4), asm.R1, asm.Byte), // and high byte
		)
	}
	if spin > 0 {
		insns = append(insns,
			asm.Mov.Imm(asm.R1, 0).WithSymbol("send"),
			asm.Add.Imm(asm.R1, 1).WithSymbol("spin"),
			asm.JLT.Imm(asm.R1, int32(spin), "spin"),
			asm.Mov.Imm(asm.R1, int32(ifindex)),
		)
	} else {
		insns = append(insns, asm.Mov.Imm(asm.R1, int32(ifindex)).WithSymbol("send"))
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRedirect.Call(),
		asm.Return(),
	)
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "flood_gen", Type: ebpf.XDP, License: "MIT", Instructions: insns})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// floorProg is the least a filter of these frames must do: Ethernet, then
// PPPoE discovery (dropped), or IPv4 or IPv6, UDP, its destination port,
// and a drop for 1701 and 5060; anything else passes.
func floorProg(b *testing.B) *ebpf.Program {
	return xdpProg(b, "rcv_floor", floorInsns(false))
}

// floorReadProg is floorProg that, for SIP (UDP 5060), also loads every
// word of the datagram up to 2 KiB before it drops the frame: what a
// filter that must see every header of a request reads at the least.
func floorReadProg(b *testing.B) *ebpf.Program {
	return xdpProg(b, "rcv_floor_read", floorInsns(true))
}

func floorInsns(readSIP bool) asm.Instructions {
	sip := "drop"
	if readSIP {
		sip = "read"
	}
	const pass, drop = 2, 1
	// Ethertypes and ports as a little-endian load of network order sees them.
	swap := func(v uint16) int32 { return int32(v>>8 | v<<8&0xff00) }
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		asm.JEq.Imm(asm.R5, swap(0x8863), "drop"),
		asm.JEq.Imm(asm.R5, swap(0x86dd), "v6"),
		asm.JNE.Imm(asm.R5, swap(0x0800), "pass"),
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
		// IPv6: the next header, then the UDP header at a fixed offset.
		asm.Mov.Reg(asm.R4, asm.R2).WithSymbol("v6"),
		asm.Add.Imm(asm.R4, 14+40),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14+6, asm.Byte),
		asm.JNE.Imm(asm.R5, 17, "pass"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14+40),
		asm.Mov.Reg(asm.R5, asm.R4).WithSymbol("udp"),
		asm.Add.Imm(asm.R5, 8),
		asm.JGT.Reg(asm.R5, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		asm.JEq.Imm(asm.R5, swap(1701), "drop"),
		asm.JEq.Imm(asm.R5, swap(5060), sip),
		asm.Mov.Imm(asm.R0, pass).WithSymbol("pass"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, drop).WithSymbol("drop"),
		asm.Return(),
	}
	if !readSIP {
		return insns
	}
	// R4 is the UDP header: fold every word after it into R7, at most
	// 256 of them, and keep the sum alive by testing it.
	return append(insns,
		asm.Mov.Reg(asm.R6, asm.R4).WithSymbol("read"),
		asm.Add.Imm(asm.R6, 8),
		asm.Mov.Imm(asm.R7, 0),
		asm.Mov.Imm(asm.R8, 0),
		asm.Mov.Reg(asm.R9, asm.R6).WithSymbol("word"),
		asm.Add.Imm(asm.R9, 8),
		asm.JGT.Reg(asm.R9, asm.R3, "read_end"),
		asm.LoadMem(asm.R5, asm.R6, 0, asm.DWord),
		asm.Xor.Reg(asm.R7, asm.R5),
		asm.Add.Imm(asm.R6, 8),
		asm.Add.Imm(asm.R8, 1),
		asm.JLT.Imm(asm.R8, 256, "word"),
		asm.JEq.Imm(asm.R7, 0x5a5a, "pass").WithSymbol("read_end"),
		asm.Mov.Imm(asm.R0, drop),
		asm.Return(),
	)
}

// floorGCRAProg is the least any rate limit does with a PADI it refuses:
// floorProg's Ethernet test, the coarse clock, one bucket's theoretical
// arrival time compared with it (GCRA, as xdpcac and nftables keep a
// limit), and a per-CPU count of the refusal. The bucket's time lies far
// ahead, so every PADI is refused; anything else passes. It is the floor
// of a refused PADI for a filter that keeps a limit at all: what xdpcac
// does beyond it is classifying, its levels, and its reject record. The
// function it returns reads how many it refused.
func floorGCRAProg(b *testing.B) (*ebpf.Program, func() uint64) {
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
	const pass, drop = 2, 1
	const padi = 0x6388 // 0x8863 as a little-endian load sees it
	lookup := func(m *ebpf.Map) asm.Instructions {
		return asm.Instructions{
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
		}
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R5, padi, "pass"),
		asm.FnKtimeGetCoarseNs.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
	}
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
		asm.Mov.Imm(asm.R0, drop).WithSymbol("drop"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, pass).WithSymbol("pass"),
		asm.Return(),
	)), counted
}

// emptyProg passes every frame.
func emptyProg(b *testing.B) *ebpf.Program {
	return xdpProg(b, "rcv_empty", asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()})
}

func xdpProg(b *testing.B, name string, insns asm.Instructions) *ebpf.Program {
	b.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "MIT", Instructions: insns})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// setXDP attaches the program of fd to iface in ns (native mode), or
// detaches it for -1.
func setXDP(ns, iface string, fd int) error {
	return testenv.Do(ns, func() error {
		l, err := netlink.LinkByName(iface)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(l, fd, 0)
	})
}

// napiThread finds the threaded-NAPI kernel thread of iface (napi/IF-ID)
// and pins it to cpu.
func napiThread(b *testing.B, iface string, cpu int) int {
	b.Helper()
	var pid int
	testenv.Poll(2*time.Second, 10*time.Millisecond, func() bool {
		comms, _ := filepath.Glob("/proc/[0-9]*/comm")
		for _, c := range comms {
			name, err := os.ReadFile(c)
			if err == nil && strings.HasPrefix(string(name), "napi/"+iface+"-") {
				pid, _ = strconv.Atoi(strings.Split(c, "/")[2])
				return true
			}
		}
		return false
	})
	if pid == 0 {
		b.Fatalf("no NAPI thread napi/%s-*: threaded NAPI is off?", iface)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		b.Fatalf("pin napi thread %d to CPU %d: %v", pid, cpu, err)
	}
	return pid
}

// threadCPU is the CPU time a thread has run, in ns: the first field of
// /proc/PID/schedstat.
func threadCPU(b *testing.B, pid int) uint64 {
	b.Helper()
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		b.Fatalf("napi thread %d: %v", pid, err)
	}
	var ns uint64
	fmt.Sscan(string(s), &ns)
	return ns
}

// cpuBusy is the busy time of one CPU in /proc/stat, in ns: all but idle
// and iowait.
func cpuBusy(b *testing.B, cpu int) uint64 {
	b.Helper()
	s, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu"+strconv.Itoa(cpu) {
			continue
		}
		var busy uint64
		for i, v := range f[1:9] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseUint(v, 10, 64)
			busy += n
		}
		return busy * uint64(time.Second) / 100 // USER_HZ
	}
	b.Fatalf("no cpu%d in /proc/stat", cpu)
	return 0
}

// ethStats are the counters ethtool -S shows for iface in ns.
func ethStats(b *testing.B, ns, iface string) map[string]uint64 {
	b.Helper()
	out := testenv.Run(b, ns, "ethtool", "-S", iface)
	m := map[string]uint64{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			m[strings.TrimSpace(k)] = n
		}
	}
	return m
}

// floodPinned is flood with the generator's thread pinned to cpu.
func floodPinned(b *testing.B, ns string, gen *ebpf.Program, frame []byte, n uint32, cpu int) {
	b.Helper()
	err := testenv.Do(ns, func() error {
		runtime.LockOSThread() // Do's thread ends with it: the pinning goes too
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return err
		}
		_, err := gen.Run(&ebpf.RunOptions{Data: frame, Repeat: n, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}
