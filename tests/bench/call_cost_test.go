package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// BenchmarkCallCost times XDP programs that make n calls of an empty
// BPF function, against one that makes none, in BPF_PROG_TEST_RUN: what
// a call and its return cost on this machine. (Return thunks and other
// mitigations the JIT emits make them dear on some CPUs.)
func BenchmarkCallCost(b *testing.B) {
	testenv.RequireBPF(b)
	frame := make([]byte, 64)
	progs := map[int]*ebpf.Program{}
	for _, n := range []int{0, 8, 32} {
		var insns asm.Instructions
		for i := 0; i < n; i++ {
			insns = append(insns, asm.Call.Label("nothing"))
		}
		insns = append(insns, asm.Mov.Imm(asm.R0, 2), asm.Return())
		if n > 0 {
			insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("nothing"), asm.Return())
		}
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: fmt.Sprintf("calls_%d", n), Type: ebpf.XDP, License: "MIT", Instructions: insns})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		progs[n] = p
	}
	const repeat = 200_000
	per := func(p *ebpf.Program) float64 {
		start := time.Now()
		if _, err := p.Run(&ebpf.RunOptions{Data: frame, Repeat: repeat}); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Nanoseconds()) / repeat
	}
	for b.Loop() {
		var base, c8, c32 []float64
		for r := 0; r < 9; r++ {
			base, c8, c32 = append(base, per(progs[0])), append(c8, per(progs[8])), append(c32, per(progs[32]))
		}
		b0 := medianOf(base)
		fmt.Printf("no call %.1f ns; 8 calls %.1f ns (%.1f ns a call); 32 calls %.1f ns (%.1f ns a call)\n",
			b0, medianOf(c8), (medianOf(c8)-b0)/8, medianOf(c32), (medianOf(c32)-b0)/32)
	}
}
