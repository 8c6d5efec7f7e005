package fastpath

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// randomCallAdmission is a charge budget as an operator might write it:
// either model, small and large limits, lifetimes from 100 ms to the
// longest, types with and without a charge line, and a stale rule.
func randomCallAdmission(rng *rand.Rand) policy.CallAdmission {
	ca := policy.CallAdmission{
		LimitMilli:   []uint64{0, 50_000, 72_000, 300_000, 400_000}[rng.IntN(5)],
		NewModel:     rng.IntN(2) == 0,
		OnStale:      policy.OnStale(rng.IntN(3)),
		StaleAfterNS: []uint64{0, 200_000_000, 5 * second}[rng.IntN(3)],
	}
	if rng.IntN(3) > 0 {
		ca.CPULimitMilli = uint32(1000 * (20 + rng.IntN(60)))
	}
	for t := range ca.Charges {
		if rng.IntN(3) > 0 {
			ca.Charges[t] = policy.Charge{
				Charge:        []uint32{1, 5, 10, 33}[rng.IntN(4)],
				LifetimeTicks: []uint32{1, 3, 10, 25, policy.MaxLifetimeTicks}[rng.IntN(5)],
			}
		}
	}
	return ca
}

// randomInputs are measurements as the control plane writes them: a CPU
// on either side of the gate, a load charge, now and then full buffers,
// and a heartbeat that is fresh, old, or absent.
func randomInputs(rng *rand.Rand, now uint64) policy.Inputs {
	pcpu := rng.Float64() * 100
	in := policy.Inputs{
		LoadMilli:   policy.Milli((pcpu + 95) * float64([]int{0, 10, 100}[rng.IntN(3)]) / 200),
		CPUMilli:    uint32(policy.Milli(pcpu)),
		BuffersFull: rng.IntN(6) == 0,
	}
	switch rng.IntN(4) {
	case 0: // no control plane: attached with cacctl attach
	case 1:
		in.HeartbeatNS = max(1, now-uint64(rng.IntN(int(10*second))))
	default:
		in.HeartbeatNS = now
	}
	return in
}

// TestChargeDifferential holds the program to the model under random
// charge budgets, measurements and buckets: bursts, gaps inside a lifetime,
// idle gaps longer than the ring, live applies and stale control planes.
func TestChargeDifferential(t *testing.T) {
	seed := diffSeed(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	frames := sourcedFrames()
	rejected := map[cac.Reason]int{}
	for round := 0; round < 16; round++ {
		f := harness.NewFastPath(t, false)
		policy := func() policy.Policy {
			var p policy.Policy
			if rng.IntN(3) == 0 {
				p = randomPolicy(t, rng)
			}
			p.CallAdmission = randomCallAdmission(rng)
			return p
		}
		f.SetPolicy(t, policy())
		now := uint64(rng.IntN(1 << 40))
		f.SetInputs(t, randomInputs(rng, now))
		for i := 0; i < 1500; i++ {
			switch rng.IntN(40) {
			case 0:
				f.SetPolicy(t, policy()) // a live apply: rings carry over
			case 1, 2:
				f.SetInputs(t, randomInputs(rng, now))
			case 3: // idle longer than the longest lifetime
				now += uint64(rng.IntN(int(400 * second)))
			case 4, 5: // a gap inside a lifetime
				now += uint64(rng.IntN(int(3 * second)))
			case 6, 7, 8, 9, 10: // the same instant
			default:
				now += uint64(rng.IntN(30_000_000))
			}
			if err := f.Tally(frames[rng.IntN(len(frames))], now, rejected); err != nil {
				t.Fatalf("seed %d round %d frame %d at %d: %v", seed, round, i, now, err)
			}
		}
		checkRings(t, f)
	}
	for _, r := range []cac.Reason{cac.ReasonStale, cac.ReasonCPULimit, cac.ReasonBuffers, cac.ReasonSessionCharges, cac.ReasonTotalCharge} {
		if rejected[r] == 0 {
			t.Errorf("seed %d: the trace never reached %v: rejected %v", seed, r, rejected)
		}
	}
	t.Logf("rejected by reason: %v", rejected)
}

// checkRings compares the program's charge rings with the model's: the
// same calls admitted, the same charges in force.
func checkRings(t *testing.T, f *harness.FastPath) {
	t.Helper()
	got, err := maps.ReadChargeRings(f.Objs.ChargeRings)
	if err != nil {
		t.Fatal(err)
	}
	want := f.Model.ChargeRings()
	for ty := range got {
		if got[ty].Total != want[ty].Total {
			t.Errorf("%v: program admitted %d charged calls, model %d", cac.CallType(ty), got[ty].Total, want[ty].Total)
		}
	}
}

// TestChargeRejectConsumesNothing: a call the charge budget rejects takes
// no token from the buckets before it, and a call a bucket rejects holds
// no charge.
func TestChargeRejectConsumesNothing(t *testing.T) {
	f := harness.NewFastPath(t, false)
	p := harness.PolicyOf(t, harness.Ios("limit 30", "vpdn 10 1"))
	p.Levels[cac.L2TPICRQ] = harness.MustRate(t, 1, 4)
	f.SetPolicy(t, p)
	f.MustAt(t, 50*second)
	if passed, reasons := f.Offer(t, harness.Icrq, 5); passed != 3 || reasons[cac.ReasonTotalCharge] != 2 {
		t.Fatalf("%d of 5 passed, rejected %v; want 3 and 2 total-charge", passed, reasons)
	}
	b, err := maps.ReadBucket(f.Objs.Buckets, int(cac.L2TPICRQ))
	if err != nil {
		t.Fatal(err)
	}
	if want := (bucket.Bucket{}); b.Conforms(p.Levels[cac.L2TPICRQ], 50*second) != want.Conforms(p.Levels[cac.L2TPICRQ], 50*second) {
		t.Fatalf("bucket is empty after 3 of 4 calls")
	}
	// One token is left: the next second, the bucket admits one call and
	// rejects the rest as class, which hold no charge.
	f.MustAt(t, 51*second)
	if passed, reasons := f.Offer(t, harness.Icrq, 4); passed != 2 || reasons[cac.ReasonClass] != 2 {
		t.Fatalf("next second: %d of 4 passed, rejected %v; want 2 (one left, one refilled) then class", passed, reasons)
	}
	rings, err := maps.ReadChargeRings(f.Objs.ChargeRings)
	if err != nil {
		t.Fatal(err)
	}
	if rings[cac.CallVPDN].Total != 5 {
		t.Errorf("the VPDN ring counts %d admitted calls, want 5", rings[cac.CallVPDN].Total)
	}
}

// TestConcurrentCharges: both CPUs flood PADIs into one charge budget of
// 20,000 calls that hold their charge for the longest lifetime; what is
// admitted must be within 3 % of the budget (on one CPU it is exact), and
// the ring must count exactly what was admitted.
func TestConcurrentCharges(t *testing.T) {
	testenv.RequireBPF(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	var objs bpf.XdpObjects
	if err := bpf.LoadXdpObjects(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	if err := maps.WritePolicy(maps.PolicyMapsOf(&objs.XdpMaps), harness.PolicyOf(t, harness.Ios("new-model", "limit 20000", "pppoe 1 300"))); err != nil {
		t.Fatal(err)
	}
	floodBothCPUs(t, objs.XdpCac, harness.Padi, 300*time.Millisecond)
	s, err := maps.ReadStats(objs.Stats)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Classes[cac.PPPoEPADI]
	rings, err := maps.ReadChargeRings(objs.ChargeRings)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d PADIs on 2 CPUs: %d admitted of a budget of 20000, %d rejected as session-charges", c.Seen(), c.Admitted, c.Rejected[cac.ReasonSessionCharges])
	if c.Rejected[cac.ReasonSessionCharges] == 0 {
		t.Fatal("the flood never filled the budget: the test measured nothing")
	}
	if c.Admitted < 19_400 || c.Admitted > 20_600 {
		t.Errorf("%d admitted, want within 3 %% of 20000", c.Admitted)
	}
	if rings[cac.CallPPPoE].Total != c.Admitted {
		t.Errorf("the ring counts %d calls, %d were admitted", rings[cac.CallPPPoE].Total, c.Admitted)
	}
}
