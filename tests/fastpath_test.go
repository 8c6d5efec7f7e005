package tests

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/fsol"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The ports every fast-path test configures: the defaults plus one more of
// each, to show that ports are configurable.
var (
	testL2TPPorts = []uint16{1701, 1702}
	testSIPPorts  = []uint16{5060, 5080}
)

// fastPath is the real XDP object, loaded but not attached, run with
// BPF_PROG_TEST_RUN.
type fastPath struct {
	objs          bpf.XdpObjects
	ports         *fsol.Ports
	malformedDrop bool
}

func newFastPath(t testing.TB, malformedDrop bool) *fastPath {
	t.Helper()
	testenv.RequireBPF(t)
	f := &fastPath{ports: fsol.NewPorts(testL2TPPorts, testSIPPorts), malformedDrop: malformedDrop}
	if err := bpf.LoadXdpObjects(&f.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load XDP object: %+v", ve)
		}
		t.Fatalf("load XDP object: %v", err)
	}
	t.Cleanup(func() { f.objs.Close() })
	if err := maps.WritePorts(f.objs.UdpPorts, testL2TPPorts, testSIPPorts); err != nil {
		t.Fatal(err)
	}
	if err := maps.WriteSettings(f.objs.Settings, maps.Settings{MalformedDrop: malformedDrop}); err != nil {
		t.Fatal(err)
	}
	return f
}

// run passes one frame through the program and returns its verdict and what
// the counters say it was.
func (f *fastPath) run(frame []byte) (cac.Verdict, fsol.Result, error) {
	before, err := maps.ReadStats(f.objs.Stats)
	if err != nil {
		return 0, fsol.Result{}, err
	}
	ret, err := f.objs.XdpCac.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return 0, fsol.Result{}, fmt.Errorf("run: %w", err)
	}
	after, err := maps.ReadStats(f.objs.Stats)
	if err != nil {
		return 0, fsol.Result{}, err
	}
	res, err := resultOf(after.Sub(before))
	return cac.Verdict(ret), res, err
}

// resultOf says which single counter moved, as a classifier result.
func resultOf(d maps.Stats) (fsol.Result, error) {
	var moved []fsol.Result
	add := func(n uint64, r fsol.Result) {
		for ; n > 0; n-- {
			moved = append(moved, r)
		}
	}
	for _, c := range cac.Classes() {
		add(d.Classes[c].Admitted, fsol.Result{Kind: cac.Session, Class: c})
		add(d.Classes[c].RejectedTotal(), fsol.Result{Kind: cac.Session, Class: c})
	}
	add(d.SIPInDialog, fsol.Result{Kind: cac.InDialog})
	add(d.Fragment, fsol.Result{Kind: cac.Fragment})
	add(d.Malformed, fsol.Result{Kind: cac.Malformed})
	add(d.PassedOther, fsol.Result{Kind: cac.Other})
	switch len(moved) {
	case 0:
		return fsol.Result{Kind: cac.Unwatched}, nil
	case 1:
		return moved[0], nil
	}
	return fsol.Result{}, fmt.Errorf("one frame moved %d counters: %v", len(moved), moved)
}

// wantVerdict is what the fast path must do with a result, before any
// admission limit is configured.
func (f *fastPath) wantVerdict(r fsol.Result) cac.Verdict {
	if r.Kind == cac.Malformed && f.malformedDrop {
		return cac.Drop
	}
	return cac.Pass
}

// testRunLinear is how much of a frame BPF_PROG_TEST_RUN shows an XDP
// program on x86-64 with 4 KiB pages: a page less XDP headroom (256) and
// skb_shared_info (320). The rest goes into fragments the program does not
// read, as with a multi-buffer frame on a NIC.
const testRunLinear = 4096 - 256 - 320

// check runs frame through both the program and the model and reports any
// difference. The model sees what the program sees.
func (f *fastPath) check(frame []byte) error {
	want := fsol.Classify(frame[:min(len(frame), testRunLinear)], f.ports)
	verdict, got, err := f.run(frame)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("XDP says %v, model says %v", got, want)
	}
	if wv := f.wantVerdict(want); verdict != wv {
		return fmt.Errorf("XDP verdict %v for %v, want %v", verdict, want, wv)
	}
	return nil
}

// passProgram is an XDP program that only returns XDP_PASS: the baseline of
// the benchmark, and a stand-in for another tool's program.
func passProgram(t testing.TB, name string) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: name, Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, int32(cac.Pass)), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
