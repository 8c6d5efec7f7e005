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
	// spoofTCPPort is a random TCP source port of a segment after an IPv4
	// header at off, with no options, whose source port is 0 and whose
	// sequence number's high half is 0xffff: its complement goes there,
	// so that the TCP checksum stays right. A new connection every
	// frame, as a SYN flood sends, from one source.
	spoofTCPPort
	// spoofV4TCP is spoofTCPPort and spoofV4 of a segment whose sequence
	// number's low half is ipv4ID too: the amount opposite to the
	// source's goes there as well, since the TCP checksum sums the source
	// but not the identification.
	spoofV4TCP
)

// ipv4ID is the identification of the IPv4 frames spoofV4 changes, whose
// source's last byte is 1: the generator writes ipv4ID+1-r into the
// identification when it writes r into that byte, so that the sum of the
// two header words, and with it the header checksum, stays the same.
const ipv4ID = 0x1000

// spoofGen is generator (bench_flood_test.go) with the kinds of spoofing
// above. With spin > 0 it counts to spin before it sends each frame, to
// offer a receiver no more than it can take (receive_paced_test.go).
func spoofGen(b testing.TB, ifindex, kind, off, spin int) *ebpf.Program {
	return frameGen(b, ifindex, genSpec{kind: kind, off: off, spin: spin})
}

// What a generator writes into every frame before it sends it.
type genSpec struct {
	kind, off int   // its spoofing (spoofNone, spoofWord, spoofV4) and where
	calls     []int // where it writes a new call (callOffsets); nil: none
	spin      int   // what it counts to before each frame; 0: flat out
}

// end is how far into a frame spec writes: a shorter frame is sent as
// it is.
func (spec genSpec) end() int {
	end := 0
	switch spec.kind {
	case spoofWord:
		end = spec.off + 4
	case spoofV4:
		end = spec.off + 20
	case spoofTCPPort, spoofV4TCP:
		end = spec.off + 20 + 8
	}
	for _, c := range spec.calls {
		end = max(end, c+callRun)
	}
	return end
}

// specOf is what the generator of f writes, spoofed or not; false if f
// has no spoofed rows.
func specOf(f rcvFrame, spoof bool) (genSpec, bool) {
	spec := genSpec{calls: f.calls}
	if spoof {
		if f.spoof.kind == spoofNone {
			return spec, false
		}
		spec.kind, spec.off = f.spoof.kind, f.spoof.off
	}
	return spec, true
}

// frameGen is the generator of spec. A flood of INVITEs an attacker sends
// is of new calls, not copies of one: a copy of a refused INVITE is
// refused again as a retransmission (bpf/invite.h) at a fraction of what
// a new call costs. So, for calls, it writes callRun letters from
// bpf_get_prandom_u32 at each of the offsets, the same letters into the
// Call-ID and the Via branch: every frame is a dialog and a transaction of
// its own, no longer than the one it was made from, and still valid SIP.
// The UDP checksum is zero, so nothing else changes.
func frameGen(b testing.TB, ifindex int, spec genSpec) *ebpf.Program {
	b.Helper()
	end := spec.end()
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word), // data_end
	}
	if end > 0 {
		insns = append(insns,
			asm.Mov.Reg(asm.R2, asm.R7),
			asm.Add.Imm(asm.R2, int32(end)),
			asm.JGT.Reg(asm.R2, asm.R8, "send"),
		)
	}
	if len(spec.calls) > 0 {
		insns = append(insns, asm.FnGetPrandomU32.Call())
		insns = append(insns, nibbleLetters()...)
		for _, c := range spec.calls {
			insns = append(insns, asm.StoreMem(asm.R7, int16(c), asm.R0, asm.DWord))
		}
	}
	switch spec.kind {
	case spoofWord:
		insns = append(insns,
			asm.FnGetPrandomU32.Call(),
			asm.StoreMem(asm.R7, int16(spec.off), asm.R0, asm.Word))
	case spoofV4, spoofV4TCP:
		insns = append(insns,
			asm.FnGetPrandomU32.Call(),
			asm.And.Imm(asm.R0, 0xff),
			asm.StoreMem(asm.R7, int16(spec.off+15), asm.R0, asm.Byte), // source, last byte
			asm.Mov.Imm(asm.R1, ipv4ID+1),
			asm.Sub.Reg(asm.R1, asm.R0),
			asm.StoreMem(asm.R7, int16(spec.off+5), asm.R1, asm.Byte), // identification, low byte
			asm.RSh.Imm(asm.R1, 8),
			asm.StoreMem(asm.R7, int16(spec.off+4), asm.R1, asm.Byte), // and high byte
		)
		if spec.kind == spoofV4TCP {
			insns = append(insns,
				asm.StoreMem(asm.R7, int16(spec.off+20+6), asm.R1, asm.Byte), // sequence number, low half
				asm.Mov.Imm(asm.R1, ipv4ID+1),
				asm.Sub.Reg(asm.R1, asm.R0),
				asm.StoreMem(asm.R7, int16(spec.off+20+7), asm.R1, asm.Byte),
			)
		}
	}
	if spec.kind == spoofTCPPort || spec.kind == spoofV4TCP {
		insns = append(insns,
			asm.FnGetPrandomU32.Call(),
			asm.And.Imm(asm.R0, 0xffff),
			asm.StoreMem(asm.R7, int16(spec.off+20+1), asm.R0, asm.Byte), // source port, low byte
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.RSh.Imm(asm.R1, 8),
			asm.StoreMem(asm.R7, int16(spec.off+20), asm.R1, asm.Byte), // and high byte
			asm.Xor.Imm(asm.R0, 0xffff),
			asm.StoreMem(asm.R7, int16(spec.off+20+5), asm.R0, asm.Byte), // sequence number, high half
			asm.RSh.Imm(asm.R0, 8),
			asm.StoreMem(asm.R7, int16(spec.off+20+4), asm.R0, asm.Byte),
		)
	}
	if spec.spin > 0 {
		insns = append(insns,
			asm.Mov.Imm(asm.R1, 0).WithSymbol("send"),
			asm.Add.Imm(asm.R1, 1).WithSymbol("spin"),
			asm.JLT.Imm(asm.R1, int32(spec.spin), "spin"),
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

// nibbleLetters turns the 32 bits in R0 into eight letters a–p in R0,
// one a nibble, without a branch or a loop: the nibbles are spread to a
// byte each, and 'a' added to every byte. Uses R1 and R2.
func nibbleLetters() asm.Instructions {
	insns := asm.Instructions{asm.Mov.Reg32(asm.R0, asm.R0)} // the high half zero
	for _, step := range []struct {
		shift int32
		mask  int64
	}{{16, 0x0000ffff0000ffff}, {8, 0x00ff00ff00ff00ff}, {4, 0x0f0f0f0f0f0f0f0f}} {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.LSh.Imm(asm.R1, step.shift),
			asm.Or.Reg(asm.R0, asm.R1),
			asm.LoadImm(asm.R2, step.mask, asm.DWord),
			asm.And.Reg(asm.R0, asm.R2),
		)
	}
	return append(insns,
		asm.LoadImm(asm.R2, 0x6161616161616161, asm.DWord),
		asm.Add.Reg(asm.R0, asm.R2),
	)
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
func ethStats(b testing.TB, ns, iface string) map[string]uint64 {
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
func floodPinned(ns string, gen *ebpf.Program, frame []byte, n uint32, cpu int) error {
	return testenv.Do(ns, func() error {
		runtime.LockOSThread() // Do's thread ends with it: the pinning goes too
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return err
		}
		_, err := gen.Run(&ebpf.RunOptions{Data: frame, Repeat: n, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
		return err
	})
}
