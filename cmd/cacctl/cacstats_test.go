package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/maps"
)

// viewOf is the view of 30 VPDN calls of charge 10 admitted at one tick,
// 11 PADIs rejected by the CPU gate and 101 calls accepted, at Pcpu 50 %
// with multiplier 100, seen 300 ms after the last heartbeat.
func viewOf(ca policy.CallAdmission) maps.CallAdmissionView {
	const now = 1000 * policy.TickNS
	var rings [cac.NumCallTypes]policy.ChargeRing
	rings[cac.CallVPDN].Advance(now / policy.TickNS)
	rings[cac.CallVPDN].Total = 30
	var s maps.Stats
	s.Classes[cac.L2TPICRQ].Admitted = 101
	s.Classes[cac.PPPoEPADI].Rejected[cac.ReasonCPULimit] = 11
	s.Classes[cac.PPPoEPADI].Rejected[cac.ReasonClass] = 7           // a bucket's: not call admission's
	s.Classes[cac.SIPOptions].Rejected[cac.ReasonTotalCharge] = 1000 // not a call; cannot happen, must not count
	in := policy.Inputs{HeartbeatNS: now - 300e6, LoadMilli: 72_500, CPUMilli: 49_000, CPUAverageMilli: 50_000}
	return maps.CallAdmissionViewOf(ca, in, rings, s, now, []string{"eth1", "ns1:eth2"})
}

func TestCallAdmissionText(t *testing.T) {
	vpdn := policy.Charge{Charge: 10, LifetimeTicks: 10}
	cases := []struct {
		name string
		ca   policy.CallAdmission
		want []string
	}{
		{"not operational", policy.CallAdmission{}, []string{
			"Call Admission Control is not operational",
			"Hardware CAC (XDP) is currently active on eth1, ns1:eth2",
		}},
		{"old model", policy.CallAdmission{LimitMilli: 400_000, StaleAfterNS: 5e9,
			Charges: [cac.NumCallTypes]policy.Charge{cac.CallVPDN: vpdn}}, []string{
			"Cac New Model (SRSM) is INACTIVE",
			"Total call admission charges: 372.5, limit 400",
			"Total calls rejected 11, accepted 101",
			"Load metric: charge 72.5, unscaled 50%",
			"Hardware CAC (XDP) is currently active on eth1, ns1:eth2",
			"Charge vpdn: 10 for 1s, 30 calls in force",
			"Control plane: heartbeat 0.3 s ago (stale after 5 s, on-stale static)",
		}},
		{"new model", policy.CallAdmission{LimitMilli: 200_000, NewModel: true, CPULimitMilli: 60_000,
			Charges: [cac.NumCallTypes]policy.Charge{cac.CallVPDN: vpdn}, OnStale: policy.StaleClosed, StaleAfterNS: 2e8}, []string{
			"Cac New Model (SRSM) is ACTIVE",
			"Total call Session charges: 300, limit 200",
			"Total calls rejected 11, accepted 101",
			"Reject reason: CPU-limit: 11 SessionCharges 0",
			"Load metric: charge 72.5, unscaled 50%",
			"Current actual CPU: 49%, Limit: 60%",
			"Hardware CAC (XDP) is currently active on eth1, ns1:eth2",
			"Charge vpdn: 10 for 1s, 30 calls in force",
			"Control plane: STALE, last heartbeat 0.3 s ago (stale after 0.2 s, on-stale closed)",
		}},
	}
	for _, c := range cases {
		var b bytes.Buffer
		show.CallAdmission(&b, viewOf(c.ca))
		got := strings.Split(strings.TrimSpace(b.String()), "\n")
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", c.name, b.String(), strings.Join(c.want, "\n"))
		}
	}
}

func TestCallAdmissionNotAttached(t *testing.T) {
	var b bytes.Buffer
	show.CallAdmission(&b, maps.CallAdmissionViewOf(policy.CallAdmission{}, policy.Inputs{}, [cac.NumCallTypes]policy.ChargeRing{}, maps.Stats{}, 1, nil))
	if want := "Call Admission Control is not operational\nHardware CAC is currently not active\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
