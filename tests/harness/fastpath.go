package harness

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/access"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The ports every fast-path test configures: the defaults plus one more of
// each, to show that ports are configurable.
var (
	TestL2TPPorts = []uint16{1701, 1702}
	TestSIPPorts  = []uint16{5060, 5080}
	// SIP over TCP and TLS: a SYN to these is a sip-connect. Not 5060,
	// whose TCP segments the frame tables keep as unwatched.
	TestSIPTCPPorts = []uint16{5061, 5081}
)

// FastPath is the real XDP object, loaded with the test clock but not
// attached, run with BPF_PROG_TEST_RUN beside the reference model it must
// agree with.
type FastPath struct {
	Objs  bpf.XdpObjects
	Model *admission.Model
	Now   uint64
	Calls int // Call-IDs given out by NextCall
}

func NewFastPath(t testing.TB, malformedDrop bool) *FastPath {
	t.Helper()
	return NewFastPathWith(t, malformedDrop, nil)
}

// NewFastPathWith is NewFastPath with edit applied to the spec before it
// loads: a smaller map, say, to reach a bound quickly.
func NewFastPathWith(t testing.TB, malformedDrop bool, edit func(*ebpf.CollectionSpec)) *FastPath {
	t.Helper()
	testenv.RequireBPF(t)
	ports := classify.NewPorts(TestL2TPPorts, TestSIPPorts).SetSIPTCP(TestSIPTCPPorts)
	f := &FastPath{Model: &admission.Model{Ports: ports, MalformedDrop: malformedDrop}}
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
	f.Model.SetDialogTable(spec.Maps[bpf.XdpMapDialogs].MaxEntries)
	if err := spec.LoadAndAssign(&f.Objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load XDP object: %+v", ve)
		}
		t.Fatalf("load XDP object: %v", err)
	}
	t.Cleanup(func() { f.Objs.Close() })
	if err := maps.WritePorts(f.Objs.UdpPorts, TestL2TPPorts, TestSIPPorts); err != nil {
		t.Fatal(err)
	}
	if err := maps.WriteSettings(f.Objs.Settings, maps.Settings{MalformedDrop: malformedDrop}); err != nil {
		t.Fatal(err)
	}
	var tcp bpf.XdpCacTcpPorts
	for _, p := range TestSIPTCPPorts {
		tcp.Sip[p] = 1
	}
	if err := f.Objs.TcpPorts.Put(uint32(0), &tcp); err != nil {
		t.Fatalf("write tcp_ports: %v", err)
	}
	return f
}

// SetPolicy gives the program and the model the same limits.
func (f *FastPath) SetPolicy(t testing.TB, p policy.Policy) {
	t.Helper()
	if err := maps.WritePolicy(maps.PolicyMapsOf(&f.Objs.XdpMaps), p); err != nil {
		t.Fatal(err)
	}
	if err := f.Model.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
}

// SetInputs gives the program and the model the same measurements of the
// control plane.
func (f *FastPath) SetInputs(t testing.TB, in policy.Inputs) {
	t.Helper()
	if err := maps.WriteInputs(maps.InputMapsOf(&f.Objs.XdpMaps), in); err != nil {
		t.Fatal(err)
	}
	f.Model.SetInputs(in)
}

// SetAgentAddrs gives the program and the model the same agents table.
func (f *FastPath) SetAgentAddrs(t testing.TB, addrs map[netip.Addr]int) {
	t.Helper()
	m := map[netip.Addr]uint32{}
	mapped := map[netip.Addr]int{}
	for a, i := range addrs {
		a16 := netip.AddrFrom16(a.As16())
		m[a16], mapped[a16] = uint32(i), i
	}
	if err := maps.WriteAgentAddrs(f.Objs.Agents, m); err != nil {
		t.Fatal(err)
	}
	f.Model.SetAgentAddrs(mapped)
}

// SetAccess gives the program and the model the same access control: the
// static lists, the auto-deny settings (SlotNS 0 for off), and the policy
// word's bits that make the program read them; after SetPolicy, which
// writes the word anew.
func (f *FastPath) SetAccess(t testing.TB, lists access.Lists, set access.Settings) {
	t.Helper()
	var bits uint32
	for p, v := range lists.Prefixes {
		k := bpf.XdpCacPrefix{Prefixlen: uint32(p.Bits()), Addr: p.Addr().As16()}
		if err := f.Objs.AccessList.Update(&k, uint32(v), ebpf.UpdateAny); err != nil {
			t.Fatalf("access_list %v: %v", p, err)
		}
	}
	for mac, v := range lists.MACs {
		var k uint64 // the MAC in its first six bytes, in memory order
		b := (*[8]byte)(unsafe.Pointer(&k))
		copy(b[:], mac[:])
		if err := f.Objs.AccessMac.Update(&k, uint32(v), ebpf.UpdateAny); err != nil {
			t.Fatalf("access_mac %x: %v", mac, err)
		}
	}
	if !lists.Empty() {
		bits |= uint32(bpf.XdpCacPolicyPOLICY_ACCESS_LISTS)
	}
	s := bpf.XdpCacAccessSettings{SlotNs: set.SlotNS, DenyForNs: set.DenyForNS, Refused: set.Refused, Ipv6Prefix: set.IPv6Prefix}
	if err := f.Objs.AccessSettings.Update(uint32(0), &s, ebpf.UpdateAny); err != nil {
		t.Fatalf("access_settings: %v", err)
	}
	auto := set.SlotNS != 0 && set.Refused != 0
	if auto {
		bits |= uint32(bpf.XdpCacPolicyPOLICY_AUTO_DENY)
	}
	var word uint32
	if err := f.Objs.PolicySlot.Lookup(uint32(0), &word); err != nil {
		t.Fatal(err)
	}
	if err := f.Objs.PolicySlot.Update(uint32(0), word|bits, ebpf.UpdateExist); err != nil {
		t.Fatal(err)
	}
	f.Model.Access = &access.Table{Lists: lists, Settings: set, AutoDeny: auto}
}

// Stats reads the program's counters.
func (f *FastPath) Stats(t testing.TB) maps.Stats {
	t.Helper()
	st, err := maps.ReadStats(f.Objs.Stats)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// At sets the clock of the program, and of the model, to now (ns).
func (f *FastPath) At(now uint64) error {
	f.Now = now
	if err := f.Objs.TestClock.Update(uint32(0), now, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("set test clock: %w", err)
	}
	return nil
}

// Run passes one frame through the program and returns what it did, as
// its verdict and counters tell.
func (f *FastPath) Run(frame []byte) (admission.Decision, error) {
	d, _, err := f.RunOut(frame)
	return d, err
}

// RunOut is run that also returns the frame as the program left it: the
// answer to an ICRQ, a translated L2TP message.
func (f *FastPath) RunOut(frame []byte) (admission.Decision, []byte, error) {
	before, err := maps.ReadStats(f.Objs.Stats)
	if err != nil {
		return admission.Decision{}, nil, err
	}
	out := make([]byte, len(frame)+256)
	opts := &ebpf.RunOptions{Data: frame, DataOut: out}
	ret, err := f.Objs.XdpCac.Run(opts)
	if err != nil {
		return admission.Decision{}, nil, fmt.Errorf("run: %w", err)
	}
	after, err := maps.ReadStats(f.Objs.Stats)
	if err != nil {
		return admission.Decision{}, nil, err
	}
	d, err := DecisionOf(after.Sub(before))
	d.Verdict = cac.Verdict(ret)
	return d, opts.DataOut, err
}

// DecisionOf says which single counter moved.
func DecisionOf(d maps.Stats) (admission.Decision, error) {
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
	// A denied frame is counted in all, and in its class's
	// rejected[denied] where the class was known before the parse.
	var denied access.Verdict
	switch {
	case d.DeniedStatic+d.DeniedAuto > 1:
		return admission.Decision{}, fmt.Errorf("one frame counted %d denials", d.DeniedStatic+d.DeniedAuto)
	case d.DeniedStatic == 1:
		denied = access.Deny
	case d.DeniedAuto == 1:
		denied = access.Auto
	}
	if denied != access.None {
		if len(moved) == 0 {
			moved = append(moved, admission.Decision{})
		}
		if len(moved) == 1 && (!moved[0].Rejected || moved[0].Reason == cac.ReasonDenied) {
			moved[0].Denied = denied
		}
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

// TestRunLinear is how much of a frame BPF_PROG_TEST_RUN shows an XDP
// program on x86-64 with 4 KiB pages: a page less XDP headroom (256) and
// skb_shared_info (320). The rest goes into fragments the program does not
// read, as with a multi-buffer frame on a NIC.
const TestRunLinear = 4096 - 256 - 320

// Check runs frame through both the program and the model, at the current
// clock, and reports any difference. The model sees what the program sees.
func (f *FastPath) Check(frame []byte) error {
	_, err := f.Decide(frame)
	return err
}

// Decide is check that also returns what both did.
//
// The frames must come out alike too: the program changes an L2TP message
// it translates or answers, and the model changes its copy the same way.
func (f *FastPath) Decide(frame []byte) (admission.Decision, error) {
	d, _, err := f.DecideOut(frame)
	return d, err
}

// DecideOut is decide that also returns the frame as the program left it.
func (f *FastPath) DecideOut(frame []byte) (admission.Decision, []byte, error) {
	// The program takes a frame's surplus priority tags out first.
	mine := classify.StripPriorityTags(append([]byte(nil), frame[:min(len(frame), TestRunLinear)]...))
	want := f.Model.Decide(mine, f.Now)
	got, out, err := f.RunOut(frame)
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

// Tally is decide at now, counting a reject by its reason.
func (f *FastPath) Tally(frame []byte, now uint64, rejected map[cac.Reason]int) error {
	if err := f.At(now); err != nil {
		return err
	}
	d, err := f.Decide(frame)
	if d.Rejected {
		rejected[d.Reason]++
	}
	return err
}

// PassProgram is an XDP program that only returns XDP_PASS: the baseline of
// the benchmark, and a stand-in for another tool's program.
func PassProgram(t testing.TB, name string) *ebpf.Program {
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

// GiveBack ends a dialog that holds sessions in the program's maps, as the
// daemon does, and in the model.
func (f *FastPath) GiveBack(t testing.TB, callid uint64) {
	t.Helper()
	if err := maps.GiveBack(maps.SessionMapsOf(&f.Objs.XdpMaps), callid); err != nil {
		t.Fatal(err)
	}
	f.Model.GiveBack(callid)
}

// SessionsHeld reads what the program's session limit i holds.
func (f *FastPath) SessionsHeld(t testing.TB, i uint32) uint64 {
	t.Helper()
	n, err := maps.SessionCount(maps.SessionMapsOf(&f.Objs.XdpMaps), i)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
