package fastpath

import (
	"fmt"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

const second = uint64(1e9)

// TestLoadChargeSeed: Pcpu 50 % with multiplier 100 is a load charge of
// 72.5; a limit of 72 then rejects every call, 73 admits them.
func TestLoadChargeSeed(t *testing.T) {
	if got := cpu.LoadCharge(50, 100); got != 72.5 {
		t.Fatalf("load charge of 50%% × 100 = %v, want 72.5", got)
	}
	for limit, wantPass := range map[int]bool{72: false, 73: true} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			f := harness.NewFastPath(t, false)
			f.SetPolicy(t, harness.PolicyOf(t, harness.Ios(fmt.Sprint("limit ", limit), "load 100 1")))
			f.MustAt(t, 10*second)
			f.SetInputs(t, f.LoadInputs(50, 100))
			for _, frame := range [][]byte{harness.Padi, harness.Icrq, harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag))} {
				passed, reasons := f.Offer(t, frame, 5)
				if wantPass && passed != 5 || !wantPass && reasons[cac.ReasonTotalCharge] != 5 {
					t.Errorf("limit %d: %d of 5 passed, rejected %v", limit, passed, reasons)
				}
			}
			// OPTIONS is no call: never charged, never gated.
			if passed, _ := f.Offer(t, harness.V4udp(5060, SIPRequest("OPTIONS", harness.ToNoTag)), 3); passed != 3 {
				t.Errorf("limit %d: %d of 3 OPTIONS passed", limit, passed)
			}
		})
	}
}

// TestSessionChargeSeed: limit 300 with `vpdn 10 1` admits 30 ICRQs per
// one-second lifetime, however they are spread inside it.
func TestSessionChargeSeed(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, harness.PolicyOf(t, harness.Ios("limit 300", "vpdn 10 1")))
	start := 100 * second
	for w := uint64(0); w < 3; w++ {
		// 40 calls spread over 0.8 s of each window: 30 pass.
		passed, reasons := 0, map[cac.Reason]int{}
		for i := uint64(0); i < 40; i++ {
			f.MustAt(t, start+w*second+i*20_000_000)
			p, r := f.Offer(t, harness.Icrq, 1)
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
		f.MustAt(t, start+3*second+i*20_000_000)
		if passed, _ := f.Offer(t, harness.Icrq, 1); passed != 1 {
			t.Fatalf("call %d after the windows: rejected", i)
		}
	}
	f.MustAt(t, start+4*second+100_000_000)
	if passed, _ := f.Offer(t, harness.Icrq, 40); passed != 10 {
		t.Errorf("sliding: %d passed at 4.10 s, want 10 (the calls before 3.20 s expired)", passed)
	}
}

// TestLoadAndSessionSeed: limit 400, `vpdn 10 1`, `load 100 1` and an idle
// CPU: the load charge is 47.5, leaving room for 35 calls a second.
func TestLoadAndSessionSeed(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, harness.PolicyOf(t, harness.Ios("limit 400", "vpdn 10 1", "load 100 1")))
	for s := uint64(1); s <= 3; s++ {
		f.MustAt(t, s*10*second)
		f.SetInputs(t, f.LoadInputs(0, 100))
		if passed, reasons := f.Offer(t, harness.Icrq, 50); passed != 35 || reasons[cac.ReasonTotalCharge] != 15 {
			t.Errorf("second %d: %d of 50 passed, rejected %v; want 35", s, passed, reasons)
		}
	}
}

// TestNewModelSessionCharges: new model, limit 200 and `pppoe 10 1`: 20
// PADIs, then session-charges; the CPU and its load charge do not count.
func TestNewModelSessionCharges(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, harness.PolicyOf(t, harness.Ios("new-model", "limit 200", "cpu-limit 60", "pppoe 10 1", "load 100 1")))
	f.MustAt(t, 5*second)
	f.SetInputs(t, f.LoadInputs(40, 100))
	if passed, reasons := f.Offer(t, harness.Padi, 30); passed != 20 || reasons[cac.ReasonSessionCharges] != 10 {
		t.Errorf("%d of 30 PADIs passed, rejected %v; want 20, then 10 session-charges", passed, reasons)
	}
	// A PADR is no new call: the session its PADI opened is never
	// refused there, however full the charges, and it adds none.
	if passed, reasons := f.Offer(t, Frame(Ether{}, PPPoE{Code: PADR}), 10); passed != 10 {
		t.Errorf("PADR under full charges: %d of 10 passed, rejected %v", passed, reasons)
	}
	// A call type with no charge line is still a call, and admitted
	// while the session charges are full: it adds nothing.
	if passed, _ := f.Offer(t, harness.Icrq, 5); passed != 5 {
		t.Errorf("ICRQ with no charge line: %d of 5 passed", passed)
	}
	f.MustAt(t, 6*second)
	if passed, _ := f.Offer(t, harness.Padi, 30); passed != 20 {
		t.Errorf("after a lifetime: %d of 30 PADIs passed, want 20", passed)
	}
}

// TestNewModelCPULimit: with CPU at or over cpu-limit every call is
// rejected as cpu-limit and counted so; below it they pass again.
func TestNewModelCPULimit(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, harness.PolicyOf(t, harness.Ios("new-model", "limit 200", "cpu-limit 60", "pppoe 10 1")))
	f.MustAt(t, 5*second)
	before := f.Stats(t)
	f.SetInputs(t, f.LoadInputs(60, 0))
	for _, frame := range [][]byte{harness.Padi, harness.Icrq, harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag))} {
		if passed, reasons := f.Offer(t, frame, 4); passed != 0 || reasons[cac.ReasonCPULimit] != 4 {
			t.Errorf("CPU 60%% of 60%%: %d passed, rejected %v", passed, reasons)
		}
	}
	// A PADR or an SCCRQ is no call: the gate does not hold it.
	for _, frame := range [][]byte{Frame(Ether{}, PPPoE{Code: PADR}), harness.V4udp(1701, L2TP{MsgType: SCCRQ})} {
		if passed, reasons := f.Offer(t, frame, 4); passed != 4 {
			t.Errorf("CPU 60%% of 60%%: %d of 4 PADR/SCCRQ passed, rejected %v", passed, reasons)
		}
	}
	if passed, _ := f.Offer(t, harness.V4udp(5060, SIPRequest("OPTIONS", harness.ToNoTag)), 2); passed != 2 {
		t.Errorf("OPTIONS under the CPU gate: %d of 2 passed", passed)
	}
	st := f.Stats(t).Sub(before)
	if got := st.Classes[cac.PPPoEPADI].Rejected[cac.ReasonCPULimit]; got != 4 {
		t.Errorf("counted %d PADIs rejected as cpu-limit, want 4", got)
	}
	// The gate took no charge: once the CPU drops, 20 PADIs pass.
	f.SetInputs(t, f.LoadInputs(59.9, 0))
	if passed, _ := f.Offer(t, harness.Padi, 25); passed != 20 {
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
			f := harness.NewFastPath(t, false)
			f.SetPolicy(t, harness.PolicyOf(t, "stale-after: 5s\non-stale: "+rule+"\n"+harness.Ios("new-model", "limit 200", "cpu-limit 60", "pppoe 10 1")))
			beat := 100 * second
			f.SetInputs(t, policy.Inputs{HeartbeatNS: beat, CPUMilli: 90_000, BuffersFull: true})
			f.MustAt(t, beat+5*second) // exactly stale-after: not yet stale
			if passed, reasons := f.Offer(t, harness.Padi, 2); passed != 0 || reasons[cac.ReasonCPULimit] != 2 {
				t.Errorf("at stale-after: %d passed, rejected %v; want cpu-limit", passed, reasons)
			}
			f.MustAt(t, beat+5*second+1)
			passed, reasons := f.Offer(t, harness.Padi, 5)
			if passed != w.passed || (w.passed == 0 && reasons[w.reason] != 5) {
				t.Errorf("stale, on-stale %s: %d of 5 passed, rejected %v; want %d passed, else %v", rule, passed, reasons, w.passed, w.reason)
			}
			if passed, _ := f.Offer(t, harness.V4udp(5060, SIPRequest("OPTIONS", harness.ToNoTag)), 2); passed != 2 {
				t.Errorf("OPTIONS while stale: %d of 2 passed", passed)
			}
			// A fresh heartbeat ends it.
			f.SetInputs(t, policy.Inputs{HeartbeatNS: beat + 6*second})
			if passed, _ := f.Offer(t, harness.Padi, 1); passed != 1 {
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
		f := harness.NewFastPath(t, false)
		f.SetPolicy(t, harness.PolicyOf(t, harness.Ios(model.lines...)))
		f.MustAt(t, 7*second)
		f.SetInputs(t, policy.Inputs{HeartbeatNS: 7 * second, BuffersFull: true})
		if passed, reasons := f.Offer(t, harness.Padi, 3); passed != 0 || reasons[model.reason] != 3 {
			t.Errorf("%v, buffers full: %d passed, rejected %v; want %v", model.lines, passed, reasons, model.reason)
		}
		f.SetInputs(t, policy.Inputs{HeartbeatNS: 7 * second})
		if passed, _ := f.Offer(t, harness.Padi, 12); passed != 10 {
			t.Errorf("%v, drained: %d of 12 passed, want 10", model.lines, passed)
		}
	}
}
