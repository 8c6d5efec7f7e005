package bench

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// newCallMark is what a frame holds where a new call's bytes go.
const newCallMark = "NCNCNCNC"

// markedAt returns the offsets of every newCallMark in frame.
func markedAt(frame []byte) []int {
	var marks []int
	for i := 0; ; {
		j := bytes.Index(frame[i:], []byte(newCallMark))
		if j < 0 {
			return marks
		}
		marks = append(marks, i+j)
		i += j + len(newCallMark)
	}
}

// stampProg returns an XDP program that writes a random new call into
// the frame, then tail-calls target: eight letters a–p at each of marks
// (the Call-ID's and the branch's, so every run is a transaction and a
// dialog of its own), and, with src > 0, four random bytes at src (the
// low 32 bits of an IPv6 source). BPF_PROG_TEST_RUN then repeats a
// flood of new calls on one buffer, as hot as a NAPI poll runs them,
// where a copy of one frame would be a retransmission after its first
// run. What the stamping costs is the row of the empty target.
func stampProg(b *testing.B, marks []int, src int, target *ebpf.Program) *ebpf.Program {
	b.Helper()
	jumps, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { jumps.Close() })
	if err := jumps.Put(uint32(0), target); err != nil {
		b.Fatal(err)
	}
	end := src + 4
	for _, m := range marks {
		end = max(end, m+8)
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R8, asm.R6, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, int32(end)),
		asm.JGT.Reg(asm.R2, asm.R8, "jump"),
		asm.FnGetPrandomU32.Call(),
		asm.Mov.Reg(asm.R9, asm.R0),
	}
	for _, m := range marks {
		for i := 0; i < 8; i++ {
			insns = append(insns,
				asm.Mov.Reg(asm.R1, asm.R9),
				asm.RSh.Imm(asm.R1, int32(4*i)),
				asm.And.Imm(asm.R1, 15),
				asm.Add.Imm(asm.R1, 'a'),
				asm.StoreMem(asm.R7, int16(m+i), asm.R1, asm.Byte))
		}
	}
	if src > 0 {
		insns = append(insns, asm.StoreMem(asm.R7, int16(src), asm.R9, asm.Word))
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("jump"),
		asm.LoadMapPtr(asm.R2, jumps.FD()),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnTailCall.Call(),
		asm.Mov.Imm(asm.R0, int32(cac.Pass)),
		asm.Return(),
	)
	// A tail call needs the caller's attach type to be its target's,
	// which a program does not tell: the two XDP ones are tried.
	spec := &ebpf.ProgramSpec{Name: "new_calls", Type: ebpf.XDP, AttachType: ebpf.AttachXDP, License: "Dual BSD/GPL", Instructions: insns}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		spec.AttachType = ebpf.AttachNone
		p, err = ebpf.NewProgram(spec)
	}
	if err != nil {
		b.Fatalf("%+v", err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}

// A row of BenchmarkNewCalls: a frame and the stamping program that runs it.
type newCallRow struct {
	name  string
	frame []byte
	prog  *ebpf.Program
}

// BenchmarkNewCalls times xdp_cac on a flood of new calls: every run of
// BPF_PROG_TEST_RUN a frame with a Call-ID and branch of its own
// (stampProg), which no table holds, as an attacker sends them; beside it
// copies of one refused INVITE, the retransmissions BenchmarkFastPath
// times. The kernel's own time a run (whole ns), medians over rounds; the
// empty program behind the same stamping is the baseline each row is
// given against.
func BenchmarkNewCalls(b *testing.B) {
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(b, 0.001, 1) // empty after the first INVITE
	p.Levels[cac.PPPoEPADI] = harness.MustRate(b, 0.001, 1) // and PADI
	p.Levels[cac.L2TPICRQ] = harness.MustRate(b, 0.001, 1)  // and ICRQ
	rejecting := production(b, p)
	empty := harness.PassProgram(b, "empty_pass")
	invite := SIPRequest("INVITE", harness.ToNoTag).
		With("Call-ID", newCallMark+"@192.0.2.1").
		With("Via", "SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK"+newCallMark)
	v4 := harness.V4udp(5060, invite)
	v6 := Frame(Ether{}, IPv6{Src: netip.MustParseAddr("2001:db8::1:1"), Dst: netip.MustParseAddr("2001:db8::2")}, UDP{Dst: 5060}, invite)
	const v6src = 14 + 8 + 12 // Ethernet, the IPv6 header to the source's last four bytes
	cases := []newCallRow{
		{"empty XDP_PASS behind the stamping", v4, stampProg(b, markedAt(v4), 0, empty)},
		{"floor: parse to the UDP port, drop", v4, stampProg(b, markedAt(v4), 0, floorProg(b))},
		{"floor-lines: the floor and every header line's first letter", v4, stampProg(b, markedAt(v4), 0, floorLinesProg(b))},
		{"sip-invite rejected, copies of one (retransmissions)", v4, stampProg(b, nil, 0, rejecting)},
		{"sip-invite rejected, a new call each run", v4, stampProg(b, markedAt(v4), 0, rejecting)},
		{"sip-invite (IPv6) rejected, a new call each run", v6, stampProg(b, markedAt(v6), 0, rejecting)},
		{"sip-invite (IPv6) rejected, a new call and source each run", v6, stampProg(b, markedAt(v6), v6src, rejecting)},
	}
	// bench-flood's INVITE with an SDP body and its worst case, with the
	// floor that finds every header line of the worst.
	frames := rcvFrames(b, Ether{})
	sdp, worst := frames["invite-sdp"], frames["worst"]
	// The PADI and ICRQ a flood repeats, against a bare limit of the same
	// parse (floorGCRAProg).
	gcra, _ := floorGCRAProg(b)
	padi, icrq := frames["padi"].data, frames["icrq"].data
	cases = append(cases,
		newCallRow{"floor-gcra: pppoe-padi refused by one bucket", padi, stampProg(b, nil, 0, gcra)},
		newCallRow{"pppoe-padi rejected", padi, stampProg(b, nil, 0, rejecting)},
		newCallRow{"floor-gcra: l2tp-icrq refused by one bucket", icrq, stampProg(b, nil, 0, gcra)},
		newCallRow{"l2tp-icrq rejected", icrq, stampProg(b, nil, 0, rejecting)},
		newCallRow{"sip-invite with SDP rejected, a new call each run", sdp.data, stampProg(b, sdp.calls, 0, rejecting)},
		newCallRow{"floor-lines: the worst INVITE", worst.data, stampProg(b, worst.calls, 0, floorLinesProg(b))},
		newCallRow{"worst INVITE rejected, a new call each run", worst.data, stampProg(b, worst.calls, 0, rejecting)})
	// XDPCAC_NEWCALLS_ONLY keeps only the rows whose names it matches
	// (and the baseline), to profile one with perf, say.
	if s := os.Getenv("XDPCAC_NEWCALLS_ONLY"); s != "" {
		re := regexp.MustCompile(s)
		cases = slices.DeleteFunc(cases, func(c newCallRow) bool { return c.prog != cases[0].prog && !re.MatchString(c.name) })
	}
	const rounds, repeat = 9, 100_000
	ns := make([][]float64, len(cases))
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			for i, c := range cases {
				_, d, err := c.prog.Benchmark(c.frame, repeat, nil)
				if err != nil {
					b.Fatal(err)
				}
				ns[i] = append(ns[i], float64(d.Nanoseconds()))
			}
		}
	}
	fmt.Fprintf(os.Stdout, "\n%d rounds of %d runs each; kernel ns a run, medians over rounds\n", rounds, repeat)
	fmt.Fprintf(os.Stdout, "| frame | bytes | ns/run | − empty |\n|---|---:|---:|---:|\n")
	base := median(ns[0])
	for i, c := range cases {
		fmt.Fprintf(os.Stdout, "| %s | %d | %.0f | %.0f |\n", c.name, len(c.frame), median(ns[i]), median(ns[i])-base)
		b.ReportMetric(median(ns[i]), strings.ReplaceAll(c.name, " ", "_")+"-ns")
	}
}
