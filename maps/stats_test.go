package maps

import (
	"encoding/json"
	"testing"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

func TestViewShape(t *testing.T) {
	var s Stats
	s.Classes[cac.SIPInvite].Admitted = 5
	s.Classes[cac.SIPInvite].Rejected[cac.ReasonEnvironment] = 2
	s.PassedOther = 3
	s.Classes[cac.ClassMalformed].Rejected[cac.ReasonMalformed] = 1
	b, err := json.Marshal(s.View())
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	classes := v["classes"].(map[string]any)
	if len(classes) != cac.NumClasses {
		t.Fatalf("classes: %v", classes)
	}
	inv := classes["sip-invite"].(map[string]any)
	if inv["seen"] != 7.0 || inv["admitted"] != 5.0 || inv["rejected"] != 2.0 {
		t.Errorf("sip-invite: %v", inv)
	}
	reasons := inv["reasons"].(map[string]any)
	if len(reasons) != cac.NumReasons || reasons["environment"] != 2.0 || reasons["session-charges"] != 0.0 {
		t.Errorf("reasons: %v", reasons)
	}
	if v["passed_other"] != 3.0 || v["malformed"] != 1.0 {
		t.Errorf("top level: %v", v)
	}
}

func TestAddSub(t *testing.T) {
	var a, b Stats
	a.Classes[cac.PPPoEPADI].Admitted, a.Fragment = 4, 1
	b.Classes[cac.PPPoEPADI].Rejected[cac.ReasonSource], b.Classes[cac.SIPInDialog].Admitted = 2, 9
	b.SIPOddForms = 3
	sum := a
	sum.Add(b)
	if sum.Classes[cac.PPPoEPADI].Seen() != 6 || sum.SIPInDialog() != 9 || sum.Fragment != 1 || sum.SIPOddForms != 3 {
		t.Errorf("sum %+v", sum)
	}
	if sum.Sub(b) != a {
		t.Errorf("sum - b = %+v, want %+v", sum.Sub(b), a)
	}
}

// TestSince: the counters shown after clear counters are the raw ones
// less the base the clear kept; a raw counter below its base (a fresh
// map since the clear) makes the base stale, and the raw counters are
// shown whole rather than wrapped around.
func TestSince(t *testing.T) {
	var base, raw Stats
	base.Classes[cac.PPPoEPADI].Admitted, raw.Classes[cac.PPPoEPADI].Admitted = 300, 760
	base.Classes[cac.SIPInvite].Rejected[cac.ReasonCPULimit], raw.Classes[cac.SIPInvite].Rejected[cac.ReasonCPULimit] = 7, 9
	base.SIPEventsLost, raw.SIPEventsLost = 2, 2
	shown, ok := raw.Since(base)
	if !ok || shown.Classes[cac.PPPoEPADI].Admitted != 460 || shown.Classes[cac.SIPInvite].Rejected[cac.ReasonCPULimit] != 2 ||
		shown.SIPEventsLost != 0 {
		t.Errorf("raw since base: %+v, %v", shown, ok)
	}
	if shown, ok := raw.Since(Stats{}); !ok || shown != raw {
		t.Errorf("since no clear: %+v, %v", shown, ok)
	}
	// One counter below its base, anywhere in the struct, and the base is
	// stale: the first class, a reason deep in a class, the last field.
	for name, lower := range map[string]func(*Stats){
		"admitted":        func(s *Stats) { s.Classes[cac.PPPoEPADI].Admitted = 299 },
		"a reason":        func(s *Stats) { s.Classes[cac.SIPInvite].Rejected[cac.ReasonCPULimit] = 6 },
		"sip_events_lost": func(s *Stats) { s.SIPEventsLost = 1 },
	} {
		fresh := raw
		lower(&fresh)
		shown, ok := fresh.Since(base)
		if ok || shown != fresh {
			t.Errorf("%s below its base: shown %+v (ok %v), want the raw counters whole", name, shown, ok)
		}
	}
}

// TestInputsRoundTrip: what WriteInputs puts in force is what ReadInputs
// reads back, every field, through the two slots.
func TestInputsRoundTrip(t *testing.T) {
	testenv.RequireBPF(t)
	var objs bpf.XdpObjects
	if err := bpf.LoadXdpObjects(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	im := InputMapsOf(&objs.XdpMaps)
	for _, in := range []policy.Inputs{
		{HeartbeatNS: 7, LoadMilli: 72_500, CPUMilli: 49_000, BuffersFull: true, CPUAverageMilli: 50_000},
		{HeartbeatNS: 8, LoadMilli: 1, CPUMilli: 2, CPUAverageMilli: 3},
	} {
		if err := WriteInputs(im, in); err != nil {
			t.Fatal(err)
		}
		got, err := ReadInputs(im)
		if err != nil || got != in {
			t.Errorf("wrote %+v, read %+v, %v", in, got, err)
		}
	}
}
