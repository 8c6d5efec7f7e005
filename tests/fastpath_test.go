package tests

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/admission"
	"github.com/xdpcac/xdpcac/cac/classify"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The ports every fast-path test configures: the defaults plus one more of
// each, to show that ports are configurable.
var (
	testL2TPPorts = []uint16{1701, 1702}
	testSIPPorts  = []uint16{5060, 5080}
)

// fastPath is the real XDP object, loaded with the test clock but not
// attached, run with BPF_PROG_TEST_RUN beside the reference model it must
// agree with.
type fastPath struct {
	objs  bpf.XdpObjects
	model *admission.Model
	now   uint64
	calls int // Call-IDs given out by nextCall
}

func newFastPath(t testing.TB, malformedDrop bool) *fastPath {
	t.Helper()
	return newFastPathWith(t, malformedDrop, nil)
}

// newFastPathWith is newFastPath with edit applied to the spec before it
// loads: a smaller map, say, to reach a bound quickly.
func newFastPathWith(t testing.TB, malformedDrop bool, edit func(*ebpf.CollectionSpec)) *fastPath {
	t.Helper()
	testenv.RequireBPF(t)
	f := &fastPath{model: &admission.Model{Ports: classify.NewPorts(testL2TPPorts, testSIPPorts), MalformedDrop: malformedDrop}}
	spec, err := bpf.LoadXdp()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables[bpf.XdpVarUseTestClock].Set(uint8(1)); err != nil {
		t.Fatal(err)
	}
	// The model never evicts; no test uses this many sources.
	spec.Maps[bpf.XdpMapSources].MaxEntries = 8192
	if edit != nil {
		edit(spec)
	}
	if err := spec.LoadAndAssign(&f.objs, nil); err != nil {
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

// setPolicy gives the program and the model the same limits.
func (f *fastPath) setPolicy(t testing.TB, p policy.Policy) {
	t.Helper()
	if err := maps.WritePolicy(maps.PolicyMapsOf(&f.objs.XdpMaps), p); err != nil {
		t.Fatal(err)
	}
	if err := f.model.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
}

// setInputs gives the program and the model the same measurements of the
// control plane.
func (f *fastPath) setInputs(t testing.TB, in policy.Inputs) {
	t.Helper()
	if err := maps.WriteInputs(maps.InputMapsOf(&f.objs.XdpMaps), in); err != nil {
		t.Fatal(err)
	}
	f.model.SetInputs(in)
}

// setAgentAddrs gives the program and the model the same agents table.
func (f *fastPath) setAgentAddrs(t testing.TB, addrs map[netip.Addr]int) {
	t.Helper()
	m := map[netip.Addr]uint32{}
	mapped := map[netip.Addr]int{}
	for a, i := range addrs {
		a16 := netip.AddrFrom16(a.As16())
		m[a16], mapped[a16] = uint32(i), i
	}
	if err := maps.WriteAgentAddrs(f.objs.Agents, m); err != nil {
		t.Fatal(err)
	}
	f.model.SetAgentAddrs(mapped)
}

// stats reads the program's counters.
func (f *fastPath) stats(t testing.TB) maps.Stats {
	t.Helper()
	st, err := maps.ReadStats(f.objs.Stats)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// at sets the clock of the program, and of the model, to now (ns).
func (f *fastPath) at(now uint64) error {
	f.now = now
	if err := f.objs.TestClock.Update(uint32(0), now, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("set test clock: %w", err)
	}
	return nil
}

// run passes one frame through the program and returns what it did, as
// its verdict and counters tell.
func (f *fastPath) run(frame []byte) (admission.Decision, error) {
	d, _, err := f.runOut(frame)
	return d, err
}

// runOut is run that also returns the frame as the program left it: the
// answer to an ICRQ, a translated L2TP message.
func (f *fastPath) runOut(frame []byte) (admission.Decision, []byte, error) {
	before, err := maps.ReadStats(f.objs.Stats)
	if err != nil {
		return admission.Decision{}, nil, err
	}
	out := make([]byte, len(frame)+256)
	opts := &ebpf.RunOptions{Data: frame, DataOut: out}
	ret, err := f.objs.XdpCac.Run(opts)
	if err != nil {
		return admission.Decision{}, nil, fmt.Errorf("run: %w", err)
	}
	after, err := maps.ReadStats(f.objs.Stats)
	if err != nil {
		return admission.Decision{}, nil, err
	}
	d, err := decisionOf(after.Sub(before))
	d.Verdict = cac.Verdict(ret)
	return d, opts.DataOut, err
}

// decisionOf says which single counter moved.
func decisionOf(d maps.Stats) (admission.Decision, error) {
	var moved []admission.Decision
	add := func(n uint64, dec admission.Decision) {
		for ; n > 0; n-- {
			moved = append(moved, dec)
		}
	}
	for _, c := range cac.Classes() {
		sess := classify.Result{Kind: cac.Session, Class: c}
		switch c { // held by a class, but not first packets
		case cac.SIPInDialog:
			sess = classify.Result{Kind: cac.InDialog}
		case cac.ClassMalformed:
			sess = classify.Result{Kind: cac.Malformed}
		}
		add(d.Classes[c].Admitted, admission.Decision{Result: sess})
		for _, r := range cac.Reasons() {
			add(d.Classes[c].Rejected[r], admission.Decision{Result: sess, Rejected: true, Reason: r})
		}
	}
	add(d.Fragment, admission.Decision{Result: classify.Result{Kind: cac.Fragment}})
	add(d.PassedOther, admission.Decision{Result: classify.Result{Kind: cac.Other}})
	odd := d.SIPOddForms + d.PPPoEOddForms
	if odd > 1 || (odd == 1 && len(moved) != 1) {
		return admission.Decision{}, fmt.Errorf("one frame counted %d odd forms in %d decisions", odd, len(moved))
	}
	switch len(moved) {
	case 0:
		return admission.Decision{Result: classify.Result{Kind: cac.Unwatched}}, nil
	case 1:
		moved[0].Odd = odd == 1
		moved[0].Uncharged = d.SIPInDialogVerified == 1 || d.SIPRetransmits == 1
		moved[0].Uncharged = moved[0].Uncharged || (d.L2TPRetransmits == 1 && !moved[0].Rejected)
		moved[0].Retransmit = d.SIPRetransmits+d.SIPRetransmitsRefused+d.L2TPRetransmits == 1
		moved[0].Answered, moved[0].Unanswered = d.L2TPAnswered == 1, d.L2TPUnanswered == 1
		return moved[0], nil
	}
	return admission.Decision{}, fmt.Errorf("one frame moved %d counters: %v", len(moved), moved)
}

// testRunLinear is how much of a frame BPF_PROG_TEST_RUN shows an XDP
// program on x86-64 with 4 KiB pages: a page less XDP headroom (256) and
// skb_shared_info (320). The rest goes into fragments the program does not
// read, as with a multi-buffer frame on a NIC.
const testRunLinear = 4096 - 256 - 320

// check runs frame through both the program and the model, at the current
// clock, and reports any difference. The model sees what the program sees.
func (f *fastPath) check(frame []byte) error {
	_, err := f.decide(frame)
	return err
}

// decide is check that also returns what both did.
//
// The frames must come out alike too: the program changes an L2TP message
// it translates or answers, and the model changes its copy the same way.
func (f *fastPath) decide(frame []byte) (admission.Decision, error) {
	d, _, err := f.decideOut(frame)
	return d, err
}

// decideOut is decide that also returns the frame as the program left it.
func (f *fastPath) decideOut(frame []byte) (admission.Decision, []byte, error) {
	mine := append([]byte(nil), frame[:min(len(frame), testRunLinear)]...)
	want := f.model.Decide(mine, f.now)
	got, out, err := f.runOut(frame)
	if err != nil {
		return got, out, err
	}
	if got != want {
		return got, out, fmt.Errorf("XDP did %v, model says %v", got, want)
	}
	if n := len(mine); len(out) < n || !bytes.Equal(out[:n], mine) {
		return got, out, fmt.Errorf("%v: XDP left the frame\n%x\nthe model\n%x", got, out[:min(n, len(out))], mine)
	}
	return got, out, nil
}

// tally is decide at now, counting a reject by its reason.
func (f *fastPath) tally(frame []byte, now uint64, rejected map[cac.Reason]int) error {
	if err := f.at(now); err != nil {
		return err
	}
	d, err := f.decide(frame)
	if d.Rejected {
		rejected[d.Reason]++
	}
	return err
}

// passProgram is an XDP program that only returns XDP_PASS: the baseline of
// the benchmark, and a stand-in for another tool's program.
func passProgram(t testing.TB, name string) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: name, Type: ebpf.XDP, AttachType: ebpf.AttachXDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, int32(cac.Pass)), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
