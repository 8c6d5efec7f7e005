package tests

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/admission"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/maps"
	. "github.com/xdpcac/xdpcac/tests/pkt"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

func mustRate(t testing.TB, cps, burst float64) bucket.Limit {
	t.Helper()
	l, err := bucket.FromRate(cps, burst)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestSeedVectorXDP runs the FlySIP example through the XDP program under
// the test clock: 1 cps, 60 calls; 50 in 5 s pass, then 20 of 55, then all
// of 10 over 50 s.
func TestSeedVectorXDP(t *testing.T) {
	invite := v4udp(5060, SIPRequest("INVITE", toNoTag))
	for trace, batches := range bucket.SeedVector() {
		f := newFastPath(t, false)
		var l admission.Limits
		l[cac.SIPInvite] = mustRate(t, 1, 60)
		f.setLimits(t, l)
		for i, b := range batches {
			passed := 0
			for _, now := range b.Times {
				if err := f.at(now); err != nil {
					t.Fatal(err)
				}
				got, err := f.run(invite)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case !got.Rejected && got.Verdict == cac.Pass:
					passed++
				case got.Rejected && (got.Reason != cac.ReasonClass || got.Verdict != cac.Drop):
					t.Fatalf("trace %d batch %d: rejected as %v with verdict %v, want class and drop", trace, i, got.Reason, got.Verdict)
				}
			}
			if passed != b.Pass {
				t.Errorf("trace %d batch %d: %d of %d INVITEs passed, want %d", trace, i, passed, len(b.Times), b.Pass)
			}
		}
	}
}

// TestRejectedConsumesNothing: the environment bucket rejects; the class
// bucket before it must not have moved.
func TestRejectedConsumesNothing(t *testing.T) {
	f := newFastPath(t, false)
	var l admission.Limits
	l[cac.PPPoEPADI] = mustRate(t, 10, 100)
	l[admission.LevelEnvironment] = mustRate(t, 1, 2)
	f.setLimits(t, l)
	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	want := []admission.Decision{
		{Result: sess(cac.PPPoEPADI), Verdict: cac.Pass},
		{Result: sess(cac.PPPoEPADI), Verdict: cac.Pass},
		{Result: sess(cac.PPPoEPADI), Verdict: cac.Drop, Rejected: true, Reason: cac.ReasonEnvironment},
	}
	for i, w := range want {
		before, err := maps.ReadBucket(f.objs.Buckets, int(cac.PPPoEPADI))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.run(padi)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Fatalf("PADI %d: got %v, want %v", i, got, w)
		}
		after, _ := maps.ReadBucket(f.objs.Buckets, int(cac.PPPoEPADI))
		if w.Rejected && after != before {
			t.Errorf("a call rejected by the environment moved the class bucket from %d to %d", before.TATNS, after.TATNS)
		}
	}
	// The class rejects first when both are empty; other classes are
	// only bound by the environment.
	l[cac.PPPoEPADI] = mustRate(t, 1, 1)
	f.setLimits(t, l)
	if err := f.at(uint64(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.check(padi); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.run(padi); !got.Rejected || got.Reason != cac.ReasonClass {
		t.Errorf("second PADI in the same instant: %v, want rejected by class", got)
	}
}

// TestAdmissionDifferential feeds the same random trace of frames and
// times to the program and the model under random limits: bursts, idle
// gaps, fractional rates, one-call buckets. XDPCAC_DIFF_SEED replays one.
func TestAdmissionDifferential(t *testing.T) {
	seed := rand.Uint64()
	if s := os.Getenv("XDPCAC_DIFF_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("XDPCAC_DIFF_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	frames := append(sessionFrames(), edgeFrames()...)
	rejected := map[cac.Reason]int{}
	for round := 0; round < 20; round++ {
		f := newFastPath(t, round%2 == 1)
		var l admission.Limits
		for i := range l {
			if rng.IntN(3) == 0 {
				continue // unlimited
			}
			cps := []float64{0.001, 0.5, 1, 3, 30, 1000}[rng.IntN(6)]
			burst := max(1, cps*[]float64{0, 0.5, 1, 60}[rng.IntN(4)])
			l[i] = mustRate(t, cps, burst)
		}
		f.setLimits(t, l)
		now := uint64(rng.IntN(1 << 40))
		for i := 0; i < 2000; i++ {
			switch rng.IntN(10) {
			case 0: // an idle gap
				now += uint64(rng.IntN(int(10 * time.Second)))
			case 1, 2: // the same instant: a burst
			default:
				now += uint64(rng.IntN(int(50 * time.Millisecond)))
			}
			if err := f.at(now); err != nil {
				t.Fatal(err)
			}
			d, err := f.decide(frames[rng.IntN(len(frames))].frame)
			if err != nil {
				t.Fatalf("seed %d round %d frame %d at %d: %v", seed, round, i, now, err)
			}
			if d.Rejected {
				rejected[d.Reason]++
			}
		}
	}
	if rejected[cac.ReasonClass] == 0 || rejected[cac.ReasonEnvironment] == 0 {
		t.Errorf("the trace never reached a limit: rejected %v", rejected)
	}
	t.Logf("rejected by reason: %v", rejected)
}

// TestConcurrentRate: both CPUs run INVITEs into the same class bucket on
// the kernel clock for a second; the admitted rate must be within 3 % of
// the configured one. On one CPU the differential tests show it is exact.
func TestConcurrentRate(t *testing.T) {
	testenv.RequireBPF(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	var objs bpf.XdpObjects
	if err := bpf.LoadXdpObjects(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	if err := maps.WritePorts(objs.UdpPorts, nil, []uint16{5060}); err != nil {
		t.Fatal(err)
	}
	// A 100 ms bucket, so that the moments when neither CPU is inside the
	// program (between test runs) lose no capacity.
	const cps, burst = 200_000, 20_000
	var l admission.Limits
	l[cac.SIPInvite] = mustRate(t, cps, burst)
	if err := maps.WriteLimits(objs.Limits, l[:]); err != nil {
		t.Fatal(err)
	}
	invite := v4udp(5060, SIPRequest("INVITE", toNoTag))

	start := time.Now()
	deadline := start.Add(time.Second)
	errs := make(chan error, 2)
	for cpu := 0; cpu < 2; cpu++ {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs <- err
				return
			}
			for time.Now().Before(deadline) {
				if _, _, err := objs.XdpCac.Benchmark(invite, 2000, nil); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	s, err := maps.ReadStats(objs.Stats)
	if err != nil {
		t.Fatal(err)
	}
	inv := s.Classes[cac.SIPInvite]
	want := burst + cps*elapsed.Seconds()
	ratio := float64(inv.Admitted) / want
	t.Logf("%d INVITEs in %v on 2 CPUs: %d admitted, %.0f expected (%.4f), %d rejected",
		inv.Seen(), elapsed, inv.Admitted, want, ratio, inv.RejectedTotal())
	if inv.RejectedTotal() == 0 {
		t.Fatal("the flood never reached the limit: the test measured nothing")
	}
	if ratio < 0.97 || ratio > 1.03 {
		t.Errorf("admitted %.4f of the configured rate, want within 3 %%", ratio)
	}
}
