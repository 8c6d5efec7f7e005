package fastpath

import (
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// TestSeedVectorXDP runs the FlySIP example through the XDP program under
// the test clock: 1 cps, 60 calls; 50 in 5 s pass, then 20 of 55, then all
// of 10 over 50 s.
func TestSeedVectorXDP(t *testing.T) {
	for trace, batches := range bucket.SeedVector() {
		f := harness.NewFastPath(t, false)
		var p policy.Policy
		p.Levels[cac.SIPInvite] = harness.MustRate(t, 1, 60)
		f.SetPolicy(t, p)
		for i, b := range batches {
			passed := 0
			for _, now := range b.Times {
				if err := f.At(now); err != nil {
					t.Fatal(err)
				}
				got, err := f.Run(harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", f.NextCall())))
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
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.PPPoEPADI] = harness.MustRate(t, 10, 100)
	p.Levels[policy.LevelEnvironment] = harness.MustRate(t, 1, 2)
	f.SetPolicy(t, p)
	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	want := []admission.Decision{
		{Result: harness.Sess(cac.PPPoEPADI), Verdict: cac.Pass},
		{Result: harness.Sess(cac.PPPoEPADI), Verdict: cac.Pass},
		{Result: harness.Sess(cac.PPPoEPADI), Verdict: cac.Drop, Rejected: true, Reason: cac.ReasonEnvironment},
	}
	for i, w := range want {
		before, err := maps.ReadBucket(f.Objs.Buckets, int(cac.PPPoEPADI))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Run(padi)
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Fatalf("PADI %d: got %v, want %v", i, got, w)
		}
		after, _ := maps.ReadBucket(f.Objs.Buckets, int(cac.PPPoEPADI))
		if w.Rejected && after != before {
			t.Errorf("a call rejected by the environment moved the class bucket from %d to %d", before.TATNS, after.TATNS)
		}
	}
	// The class rejects first when both are empty; other classes are
	// only bound by the environment.
	p.Levels[cac.PPPoEPADI] = harness.MustRate(t, 1, 1)
	f.SetPolicy(t, p)
	if err := f.At(uint64(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(padi); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.Run(padi); !got.Rejected || got.Reason != cac.ReasonClass {
		t.Errorf("second PADI in the same instant: %v, want rejected by class", got)
	}
}

// TestAdmissionDifferential feeds the same random trace of frames and
// times to the program and the model under random limits: bursts, idle
// gaps, fractional rates, one-call buckets. XDPCAC_DIFF_SEED replays one.
func TestAdmissionDifferential(t *testing.T) {
	seed := diffSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	var frames [][]byte
	for _, c := range append(harness.SessionFrames(), harness.EdgeFrames()...) {
		frames = append(frames, c.Frame)
	}
	frames = append(frames, sourcedFrames()...)
	rejected := map[cac.Reason]int{}
	for round := 0; round < 20; round++ {
		f := harness.NewFastPath(t, round%2 == 1)
		policyOf := func() policy.Policy {
			p := randomPolicy(t, rng)
			if round == 19 {
				// Half the policies have agents, whose random rates
				// may never run short: the last round's surely do, so
				// that every seed reaches the agent level.
				p.Agents = []policy.Agent{{Limit: harness.MustRate(t, 0.001, 1)}, {Limit: harness.MustRate(t, 0.001, 1)}}
			}
			return p
		}
		f.SetPolicy(t, policyOf())
		f.SetAgentAddrs(t, diffAgentAddrs)
		now := uint64(rng.IntN(1 << 40))
		for i := 0; i < 2000; i++ {
			if i == 1000 {
				// A live apply halfway: buckets carry over, to the model too.
				f.SetPolicy(t, policyOf())
			}
			switch rng.IntN(10) {
			case 0: // an idle gap
				now += uint64(rng.IntN(int(10 * time.Second)))
			case 1, 2: // the same instant: a burst
			default:
				now += uint64(rng.IntN(int(50 * time.Millisecond)))
			}
			if err := f.Tally(frames[rng.IntN(len(frames))], now, rejected); err != nil {
				t.Fatalf("seed %d round %d frame %d at %d: %v", seed, round, i, now, err)
			}
		}
	}
	for _, r := range []cac.Reason{cac.ReasonSource, cac.ReasonAccount, cac.ReasonCustomer, cac.ReasonAgent, cac.ReasonClass, cac.ReasonEnvironment} {
		if rejected[r] == 0 {
			t.Errorf("the trace never reached the %v level: rejected %v", r, rejected)
		}
	}
	t.Logf("rejected by reason: %v", rejected)
}

// TestConcurrentRate: both CPUs run INVITEs into the same class bucket
// while the test clock moves on in steps of 10 ms; after each step the
// flood drains the bucket again. Every step frees exactly 2,000 calls at
// 200,000 a second, so with the burst of 20,000 the admitted calls must be
// exact, whatever the machine's speed: a lost or doubled update of the
// bucket between the CPUs shows as a difference.
func TestConcurrentRate(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	f := harness.NewFastPath(t, false)
	const cps, burst, steps = 200_000, 20_000, 50
	const step = 10 * time.Millisecond
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, cps, burst)
	f.SetPolicy(t, p)
	f.MustAt(t, 10*second)
	// One INVITE over and over, without a Via: it names no transaction,
	// so no copy is taken for a retransmission and each one is charged.
	invite := harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag).Without("Via"))

	rejected := func() uint64 { return f.Stats(t).Classes[cac.SIPInvite].RejectedTotal() }
	var stop atomic.Bool
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		floodBothCPUsWhile(t, f.Objs.XdpCac, invite, func() bool { return !stop.Load() })
	}()
	// drained waits until the flood is rejected again: the bucket is empty.
	drained := func() bool {
		before := rejected()
		return testenv.Poll(30*time.Second, time.Millisecond, func() bool { return rejected() >= before+1000 })
	}
	for k := 0; k <= steps; k++ {
		if k > 0 {
			f.MustAt(t, 10*second+uint64(k)*uint64(step))
		}
		if !drained() {
			stop.Store(true)
			<-flooded
			t.Fatalf("step %d: the flood did not drain the bucket in 30 s", k)
		}
	}
	stop.Store(true)
	<-flooded

	inv := f.Stats(t).Classes[cac.SIPInvite]
	want := uint64(burst + cps*steps*step.Seconds())
	t.Logf("%d INVITEs on 2 CPUs: %d admitted (want %d), %d rejected", inv.Seen(), inv.Admitted, want, inv.RejectedTotal())
	if inv.Admitted != want {
		t.Errorf("%d admitted, want exactly %d", inv.Admitted, want)
	}
}

// floodBothCPUs runs frame through prog from a thread on each of two CPUs
// for d, and returns how long that took.
func floodBothCPUs(t *testing.T, prog *ebpf.Program, frame []byte, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	floodBothCPUsWhile(t, prog, frame, func() bool { return time.Now().Before(deadline) })
	return time.Since(start)
}

// floodBothCPUsWhile runs frame through prog from a thread on each of two
// CPUs for as long as more says so.
func floodBothCPUsWhile(t *testing.T, prog *ebpf.Program, frame []byte, more func() bool) {
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
			for more() {
				if _, _, err := prog.Benchmark(frame, 2000, nil); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < 2; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// randomRate is a limit as an operator might write it: fractional rates,
// one-call buckets, a minute of calls.
func randomRate(t testing.TB, rng *rand.Rand) bucket.Limit {
	cps := []float64{0.001, 0.5, 1, 3, 30, 1000}[rng.IntN(6)]
	burst := max(1, cps*[]float64{0, 0.5, 1, 60}[rng.IntN(4)])
	return harness.MustRate(t, cps, burst)
}

// randomPolicy limits some levels at random, and puts some of the sources
// of sourcedFrames into accounts of two customers.
func randomPolicy(t testing.TB, rng *rand.Rand) policy.Policy {
	var p policy.Policy
	for i := range p.Levels {
		if rng.IntN(3) > 0 {
			p.Levels[i] = randomRate(t, rng)
			if tol := p.Levels[i].ToleranceNS; rng.IntN(2) == 0 { // strangers leave some to agents
				p.ReserveNS[i] = rng.Uint64N(tol + 1)
			}
		}
	}
	for c := range p.PerSource {
		if rng.IntN(2) == 0 {
			key := policy.SourceIP
			if cac.Class(c) == cac.PPPoEPADI || cac.Class(c) == cac.PPPoEPADR {
				key = policy.SourceKey(1 + rng.IntN(3))
			}
			p.PerSource[c] = policy.PerSource{Limit: randomRate(t, rng), Key: key, IPv6Prefix: []int{128, 64, 60, 3}[rng.IntN(4)]}
		}
	}
	if rng.IntN(2) == 0 { // the agents of diffAgentAddrs
		p.Agents = []policy.Agent{{Limit: randomRate(t, rng)}, {Limit: randomRate(t, rng)}}
	}
	if rng.IntN(2) == 0 {
		p.Customers = []bucket.Limit{randomRate(t, rng), bucket.Unlimited}
		p.Accounts = []policy.Account{
			{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Limit: randomRate(t, rng), Customer: 0},
			{Prefix: netip.MustParsePrefix("198.51.100.7/32"), Limit: randomRate(t, rng), Customer: 0},
			{Prefix: netip.MustParsePrefix("2001:db8:1::/48"), Limit: randomRate(t, rng), Customer: 1},
		}
	}
	return p
}

// diffAgentAddrs are session agents among the sources of sourcedFrames:
// one also inside an account, one not, and an address left over for an
// agent no policy has; policies have zero or two agents.
var diffAgentAddrs = map[netip.Addr]int{
	netip.MustParseAddr("198.51.100.8"):  0, // in the account 198.51.100.0/24
	netip.MustParseAddr("2001:db8:2::1"): 1,
	netip.MustParseAddr("203.0.113.10"):  2, // no agent 2: a stranger
}

// sourcedFrames are first packets of every class from a few sources each,
// some inside the accounts of randomPolicy: IPv4 and IPv6 addresses, MACs
// and VLANs.
func sourcedFrames() [][]byte {
	var out [][]byte
	v4 := []string{"198.51.100.7", "198.51.100.8", "203.0.113.9", "203.0.113.10"}
	v6 := []string{"2001:db8:1::5", "2001:db8:1:2::5", "2001:db8:2::1", "2001:db8:2::2"}
	for i := range v4 {
		s4, s6 := netip.MustParseAddr(v4[i]), netip.MustParseAddr(v6[i])
		mac := [6]byte{2, 0, 0x5e, 0, 0x53, byte(i % 2)}
		out = append(out,
			Frame(Ether{}, IPv4{Src: s4}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag)),
			Frame(Ether{}, IPv6{Src: s6}, UDP{Dst: 5060}, SIPRequest("OPTIONS", harness.ToNoTag)),
			Frame(Ether{}, IPv6{Src: s6}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag)), // agent 1's calls
			Frame(Ether{}, IPv4{Src: s4}, UDP{Dst: 5060}, SIPRequest("REGISTER", harness.ToTag)),
			Frame(Ether{}, IPv6{Src: s6}, UDP{Dst: 5060}, SIPRequest("invite", harness.ToTag)), // in dialog
			Frame(Ether{}, IPv4{Src: s4}, UDP{Dst: 5060}, SIPRequest("SUBSCRIBE", harness.ToNoTag)),
			Frame(Ether{}, IPv6{Src: s6}, UDP{Dst: 5060, Len: 4}, SIPRequest("INVITE", harness.ToNoTag)), // malformed
			Frame(Ether{}, IPv4{Src: s4}, UDP{Dst: 1701}, L2TP{MsgType: ICRQ}),
			Frame(Ether{}, IPv6{Src: s6}, UDP{Dst: 1701}, L2TP{MsgType: SCCRQ}),
			Frame(Ether{Src: mac, Broadcast: true}, VLAN{ID: uint16(10 + i/2)}, PPPoE{Code: PADI}),
			Frame(Ether{Src: mac}, VLAN{TPID: 0x88a8, ID: 5}, VLAN{ID: uint16(i)}, PPPoE{Code: PADR}),
		)
	}
	return out
}

// TestApplyKeepsState: new limits take effect at once, buckets and
// counters carry over, and the slot in force switches.
func TestApplyKeepsState(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 1, 5)
	p.Customers = []bucket.Limit{harness.MustRate(t, 1, 4)}
	p.Accounts = []policy.Account{{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Limit: harness.MustRate(t, 1, 3)}}
	f.SetPolicy(t, p)
	var slot uint32
	if err := f.Objs.PolicySlot.Lookup(uint32(0), &slot); err != nil || slot&1 != 1 {
		t.Fatalf("after the first write the slot is %d (%v), want 1", slot, err)
	}
	invite := func() []byte {
		return harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", f.NextCall()))
	}
	fromAccount := func() []byte { return harness.InviteFrom(netip.MustParseAddr("198.51.100.9"), f.NextCall()) }
	calls := []func() []byte{invite, invite, invite, fromAccount, fromAccount, fromAccount, fromAccount, invite}
	for _, call := range calls {
		if err := f.Check(call()); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := maps.ReadStats(f.Objs.Stats)

	// A larger class bucket and account: the calls already taken still
	// count, so only the difference passes.
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 1, 8)
	p.Accounts[0].Limit = harness.MustRate(t, 1, 4)
	p.Customers[0] = harness.MustRate(t, 1, 6)
	f.SetPolicy(t, p)
	if err := f.Objs.PolicySlot.Lookup(uint32(0), &slot); err != nil || slot&1 != 0 {
		t.Fatalf("after apply the slot is %d (%v), want 0", slot, err)
	}
	after, _ := maps.ReadStats(f.Objs.Stats)
	if after != before {
		t.Errorf("apply changed the counters: %+v to %+v", before, after)
	}
	admitted := 0
	for _, call := range append(calls, calls...) {
		d, err := f.Decide(call())
		if err != nil {
			t.Fatal(err)
		}
		if !d.Rejected {
			admitted++
		}
	}
	// The class had 5 taken of 5; now 8: 3 more, whichever frames come.
	if admitted != 3 {
		t.Errorf("%d INVITEs admitted after apply, want 3", admitted)
	}
}

// TestApplyShrinksBacklog: a bucket drained under a slow limit refills at
// the new rate once a faster, smaller one is applied.
func TestApplyShrinksBacklog(t *testing.T) {
	f := harness.NewFastPath(t, false)
	var p policy.Policy
	p.Levels[cac.PPPoEPADI] = harness.MustRate(t, 1, 60)
	f.SetPolicy(t, p)
	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	for i := 0; i < 61; i++ {
		if err := f.Check(padi); err != nil {
			t.Fatal(err)
		}
	}
	p.Levels[cac.PPPoEPADI] = harness.MustRate(t, 1000, 10)
	f.SetPolicy(t, p)
	for _, c := range []struct {
		at   time.Duration
		pass bool
	}{{2 * time.Millisecond, false}, {3 * time.Millisecond, true}} {
		if err := f.At(uint64(c.at)); err != nil {
			t.Fatal(err)
		}
		d, err := f.Decide(padi)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rejected == c.pass {
			t.Errorf("at %v: %v, want passed %v", c.at, d, c.pass)
		}
	}
}
