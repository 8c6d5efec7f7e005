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
