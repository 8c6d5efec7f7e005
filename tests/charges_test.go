package tests

import (
	"fmt"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
)

// policyOf is the policy of a cac.yaml given as text.
func policyOf(t testing.TB, yaml string) policy.Policy {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Of(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ios is a configuration of call-admission lines alone.
func ios(lines ...string) string {
	s := "call-admission: |\n"
	for _, l := range lines {
		s += "  call admission " + l + "\n"
	}
	return s
}

// offer runs n copies of frame at the current clock through the program
// and the model, which must agree on each, and counts what passed and why
// the rest were rejected. Copies of an INVITE are one call and its
// retransmissions; offerCalls makes n calls.
func (f *fastPath) offer(t testing.TB, frame []byte, n int) (passed int, reasons map[cac.Reason]int) {
	t.Helper()
	return f.offerCalls(t, func(string) []byte { return frame }, n)
}

// nextCall is the Call-ID of a call f has not seen yet.
func (f *fastPath) nextCall() string {
	f.calls++
	return callID(f.calls)
}

// offerCalls is offer for n calls of their own: build makes each one's
// frame from a Call-ID f has not seen before.
func (f *fastPath) offerCalls(t testing.TB, build func(callID string) []byte, n int) (passed int, reasons map[cac.Reason]int) {
	t.Helper()
	reasons = map[cac.Reason]int{}
	for i := 0; i < n; i++ {
		d, err := f.decide(build(f.nextCall()))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if d.Rejected {
			reasons[d.Reason]++
		} else {
			passed++
		}
	}
	return passed, reasons
}

func (f *fastPath) mustAt(t testing.TB, now uint64) {
	t.Helper()
	if err := f.at(now); err != nil {
		t.Fatal(err)
	}
}

const second = uint64(1e9)

var (
	padi = Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	icrq = v4udp(1701, L2TP{MsgType: ICRQ})
)

// loadInputs are measurements of Pcpu percent with a load multiplier,
// written by a control plane whose heartbeat is the fast path's clock now:
// fresh, so that the on-stale rule plays no part.
func (f *fastPath) loadInputs(pcpu float64, multiplier uint32) policy.Inputs {
	return policy.Inputs{
		HeartbeatNS: f.now,
		LoadMilli:   policy.Milli(cpu.LoadCharge(pcpu, multiplier)),
		CPUMilli:    uint32(policy.Milli(pcpu)),
	}
}

// TestLoadChargeSeed: Pcpu 50 % with multiplier 100 is a load charge of
// 72.5; a limit of 72 then rejects every call, 73 admits them.
func TestLoadChargeSeed(t *testing.T) {
	if got := cpu.LoadCharge(50, 100); got != 72.5 {
		t.Fatalf("load charge of 50%% × 100 = %v, want 72.5", got)
	}
	for limit, wantPass := range map[int]bool{72: false, 73: true} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			f := newFastPath(t, false)
			f.setPolicy(t, policyOf(t, ios(fmt.Sprint("limit ", limit), "load 100 1")))
			f.mustAt(t, 10*second)
			f.setInputs(t, f.loadInputs(50, 100))
			for _, frame := range [][]byte{padi, icrq, v4udp(5060, SIPRequest("INVITE", toNoTag))} {
				passed, reasons := f.offer(t, frame, 5)
				if wantPass && passed != 5 || !wantPass && reasons[cac.ReasonTotalCharge] != 5 {
					t.Errorf("limit %d: %d of 5 passed, rejected %v", limit, passed, reasons)
				}
			}
			// OPTIONS is no call: never charged, never gated.
			if passed, _ := f.offer(t, v4udp(5060, SIPRequest("OPTIONS", toNoTag)), 3); passed != 3 {
				t.Errorf("limit %d: %d of 3 OPTIONS passed", limit, passed)
			}
		})
	}
}

// TestSessionChargeSeed: limit 300 with `vpdn 10 1` admits 30 ICRQs per
// one-second lifetime, however they are spread inside it.
func TestSessionChargeSeed(t *testing.T) {
	f := newFastPath(t, false)
	f.setPolicy(t, policyOf(t, ios("limit 300", "vpdn 10 1")))
	start := 100 * second
	for w := uint64(0); w < 3; w++ {
		// 40 calls spread over 0.8 s of each window: 30 pass.
		passed, reasons := 0, map[cac.Reason]int{}
		for i := uint64(0); i < 40; i++ {
			f.mustAt(t, start+w*second+i*20_000_000)
			p, r := f.offer(t, icrq, 1)
			passed += p
			reasons[cac.ReasonTotalCharge] += r[cac.ReasonTotalCharge]
		}
		if passed != 30 || reasons[cac.ReasonTotalCharge] != 10 {
			t.Errorf("window %d: %d of 40 passed, %d rejected as total-charge; want 30 and 10", w, passed, reasons[cac.ReasonTotalCharge])
		}
	}
	// The window slides in ticks of 100 ms: 30 calls from 3.00 s, 20 ms
	// apart, fill it; at 4.10 s those before 3.20 s (10 of them) have
	// expired, and 10 new calls pass.
	for i := uint64(0); i < 30; i++ {
		f.mustAt(t, start+3*second+i*20_000_000)
		if passed, _ := f.offer(t, icrq, 1); passed != 1 {
			t.Fatalf("call %d after the windows: rejected", i)
		}
	}
	f.mustAt(t, start+4*second+100_000_000)
	if passed, _ := f.offer(t, icrq, 40); passed != 10 {
		t.Errorf("sliding: %d passed at 4.10 s, want 10 (the calls before 3.20 s expired)", passed)
	}
}

// TestLoadAndSessionSeed: limit 400, `vpdn 10 1`, `load 100 1` and an idle
// CPU: the load charge is 47.5, leaving room for 35 calls a second.
func TestLoadAndSessionSeed(t *testing.T) {
	f := newFastPath(t, false)
	f.setPolicy(t, policyOf(t, ios("limit 400", "vpdn 10 1", "load 100 1")))
	for s := uint64(1); s <= 3; s++ {
		f.mustAt(t, s*10*second)
		f.setInputs(t, f.loadInputs(0, 100))
		if passed, reasons := f.offer(t, icrq, 50); passed != 35 || reasons[cac.ReasonTotalCharge] != 15 {
			t.Errorf("second %d: %d of 50 passed, rejected %v; want 35", s, passed, reasons)
		}
	}
}

// TestNewModelSessionCharges: new model, limit 200 and `pppoe 10 1`: 20
// PADIs, then session-charges; the CPU and its load charge do not count.
func TestNewModelSessionCharges(t *testing.T) {
	f := newFastPath(t, false)
	f.setPolicy(t, policyOf(t, ios("new-model", "limit 200", "cpu-limit 60", "pppoe 10 1", "load 100 1")))
	f.mustAt(t, 5*second)
	f.setInputs(t, f.loadInputs(40, 100))
	if passed, reasons := f.offer(t, padi, 30); passed != 20 || reasons[cac.ReasonSessionCharges] != 10 {
		t.Errorf("%d of 30 PADIs passed, rejected %v; want 20, then 10 session-charges", passed, reasons)
	}
	// A PADR is no new call: the session its PADI opened is never
	// refused there, however full the charges, and it adds none.
	if passed, reasons := f.offer(t, Frame(Ether{}, PPPoE{Code: PADR}), 10); passed != 10 {
		t.Errorf("PADR under full charges: %d of 10 passed, rejected %v", passed, reasons)
	}
	// A call type with no charge line is still a call, and admitted
	// while the session charges are full: it adds nothing.
	if passed, _ := f.offer(t, icrq, 5); passed != 5 {
		t.Errorf("ICRQ with no charge line: %d of 5 passed", passed)
	}
	f.mustAt(t, 6*second)
	if passed, _ := f.offer(t, padi, 30); passed != 20 {
		t.Errorf("after a lifetime: %d of 30 PADIs passed, want 20", passed)
	}
}

// TestNewModelCPULimit: with CPU at or over cpu-limit every call is
// rejected as cpu-limit and counted so; below it they pass again.
func TestNewModelCPULimit(t *testing.T) {
	f := newFastPath(t, false)
	f.setPolicy(t, policyOf(t, ios("new-model", "limit 200", "cpu-limit 60", "pppoe 10 1")))
	f.mustAt(t, 5*second)
	before := f.stats(t)
	f.setInputs(t, f.loadInputs(60, 0))
	for _, frame := range [][]byte{padi, icrq, v4udp(5060, SIPRequest("INVITE", toNoTag))} {
		if passed, reasons := f.offer(t, frame, 4); passed != 0 || reasons[cac.ReasonCPULimit] != 4 {
			t.Errorf("CPU 60%% of 60%%: %d passed, rejected %v", passed, reasons)
		}
	}
	// A PADR or an SCCRQ is no call: the gate does not hold it.
	for _, frame := range [][]byte{Frame(Ether{}, PPPoE{Code: PADR}), v4udp(1701, L2TP{MsgType: SCCRQ})} {
		if passed, reasons := f.offer(t, frame, 4); passed != 4 {
			t.Errorf("CPU 60%% of 60%%: %d of 4 PADR/SCCRQ passed, rejected %v", passed, reasons)
		}
	}
	if passed, _ := f.offer(t, v4udp(5060, SIPRequest("OPTIONS", toNoTag)), 2); passed != 2 {
		t.Errorf("OPTIONS under the CPU gate: %d of 2 passed", passed)
	}
	st := f.stats(t).Sub(before)
	if got := st.Classes[cac.PPPoEPADI].Rejected[cac.ReasonCPULimit]; got != 4 {
		t.Errorf("counted %d PADIs rejected as cpu-limit, want 4", got)
	}
	// The gate took no charge: once the CPU drops, 20 PADIs pass.
	f.setInputs(t, f.loadInputs(59.9, 0))
	if passed, _ := f.offer(t, padi, 25); passed != 20 {
		t.Errorf("CPU 59.9%%: %d of 25 PADIs passed, want 20", passed)
	}
}

// TestStaleControlPlane: a control plane that wrote CPU 90 % and full
// buffers, then fell silent. Within stale-after its values hold; after it,
// static keeps them, open ignores them, closed rejects every call as stale.
func TestStaleControlPlane(t *testing.T) {
	want := map[string]struct {
		passed int
		reason cac.Reason
	}{
		"static": {0, cac.ReasonCPULimit},
		"open":   {5, 0},
		"closed": {0, cac.ReasonStale},
	}
	for rule, w := range want {
		t.Run(rule, func(t *testing.T) {
			f := newFastPath(t, false)
			f.setPolicy(t, policyOf(t, "stale-after: 5s\non-stale: "+rule+"\n"+ios("new-model", "limit 200", "cpu-limit 60", "pppoe 10 1")))
			beat := 100 * second
			f.setInputs(t, policy.Inputs{HeartbeatNS: beat, CPUMilli: 90_000, BuffersFull: true})
			f.mustAt(t, beat+5*second) // exactly stale-after: not yet stale
			if passed, reasons := f.offer(t, padi, 2); passed != 0 || reasons[cac.ReasonCPULimit] != 2 {
				t.Errorf("at stale-after: %d passed, rejected %v; want cpu-limit", passed, reasons)
			}
			f.mustAt(t, beat+5*second+1)
			passed, reasons := f.offer(t, padi, 5)
			if passed != w.passed || (w.passed == 0 && reasons[w.reason] != 5) {
				t.Errorf("stale, on-stale %s: %d of 5 passed, rejected %v; want %d passed, else %v", rule, passed, reasons, w.passed, w.reason)
			}
			if passed, _ := f.offer(t, v4udp(5060, SIPRequest("OPTIONS", toNoTag)), 2); passed != 2 {
				t.Errorf("OPTIONS while stale: %d of 2 passed", passed)
			}
			// A fresh heartbeat ends it.
			f.setInputs(t, policy.Inputs{HeartbeatNS: beat + 6*second})
			if passed, _ := f.offer(t, padi, 1); passed != 1 {
				t.Errorf("after a fresh heartbeat: PADI rejected")
			}
		})
	}
}

// TestBufferCharge: full buffers reject every call, as buffers in the new
// model and as total-charge in the old, and take no charge.
func TestBufferCharge(t *testing.T) {
	for _, model := range []struct {
		lines  []string
		reason cac.Reason
	}{
		{[]string{"new-model", "limit 100", "pppoe 10 1"}, cac.ReasonBuffers},
		{[]string{"limit 100", "pppoe 10 1"}, cac.ReasonTotalCharge},
	} {
		f := newFastPath(t, false)
		f.setPolicy(t, policyOf(t, ios(model.lines...)))
		f.mustAt(t, 7*second)
		f.setInputs(t, policy.Inputs{HeartbeatNS: 7 * second, BuffersFull: true})
		if passed, reasons := f.offer(t, padi, 3); passed != 0 || reasons[model.reason] != 3 {
			t.Errorf("%v, buffers full: %d passed, rejected %v; want %v", model.lines, passed, reasons, model.reason)
		}
		f.setInputs(t, policy.Inputs{HeartbeatNS: 7 * second})
		if passed, _ := f.offer(t, padi, 12); passed != 10 {
			t.Errorf("%v, drained: %d of 12 passed, want 10", model.lines, passed)
		}
	}
}
