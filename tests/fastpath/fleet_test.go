package fastpath

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// fleetPolicy is randomPolicy with some of its limited levels, customers
// and accounts made fleet-scope, and their fleet limits listed.
func fleetPolicy(t testing.TB, rng *rand.Rand) policy.Policy {
	p := randomPolicy(t, rng)
	fleet := func(name string, level, customer, account int) {
		p.Fleet = append(p.Fleet, policy.FleetLimit{Name: name, CPS: 1, Burst: 1, Level: level, Customer: customer, Account: account})
	}
	for i := range p.Levels {
		if p.Levels[i].IntervalNS != 0 && rng.IntN(2) == 0 {
			p.Levels[i].Fleet = true
			fleet("level", i, -1, -1)
		}
	}
	for i := range p.Customers {
		if p.Customers[i].IntervalNS != 0 && rng.IntN(2) == 0 {
			p.Customers[i].Fleet = true
			fleet("customer", -1, i, -1)
		}
	}
	for i := range p.Accounts {
		if rng.IntN(2) == 0 {
			p.Accounts[i].Limit.Fleet = true
			fleet("account", -1, -1, i)
		}
	}
	return p
}

// mapLeases maps the program's leases map for the test.
// outcomeAt runs frame at time at on the test clock, holds the program to
// the model, and says what became of it: admitted, or the reason.
func outcomeAt(t *testing.T, f *harness.FastPath, at uint64, frame []byte) string {
	t.Helper()
	f.MustAt(t, at)
	d, err := f.Decide(frame)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rejected {
		return d.Reason.String()
	}
	return "admitted"
}

// fleetInvites is a fast path whose sip-invite class is fleet-scope (cps
// 100, burst 100), and its leases mapped.
func fleetInvites(t *testing.T) (*harness.FastPath, *maps.Leases) {
	t.Helper()
	f := harness.NewFastPath(t, false)
	leases := mapLeases(t, f)
	var p policy.Policy
	p.Levels[cac.SIPInvite] = harness.MustRate(t, 100, 100)
	p.Levels[cac.SIPInvite].Fleet = true
	f.SetPolicy(t, p)
	return f, leases
}

func mapLeases(t testing.TB, f *harness.FastPath) *maps.Leases {
	t.Helper()
	l, err := maps.MapLeases(f.Objs.Leases)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestFleetLeaseDifferential: random traces under random policies with
// fleet-scope levels, while leases are granted and expired at random, as
// a daemon renews them: the program and the model agree on every verdict
// and on every lease's tokens, and each expiry takes back the same count.
func TestFleetLeaseDifferential(t *testing.T) {
	seed := diffSeed(t)
	rng := rand.New(rand.NewPCG(seed, 18))
	frames := sourcedFrames()
	rejected := map[cac.Reason]int{}
	var granted, expired, spentAtFleet int64
	for round := 0; round < 10; round++ {
		f := harness.NewFastPath(t, false)
		leases := mapLeases(t, f)
		p := fleetPolicy(t, rng)
		f.SetPolicy(t, p)
		f.SetAgentAddrs(t, diffAgentAddrs)
		inForce, err := maps.LeasesInForce(maps.PolicyMapsOf(&f.Objs.XdpMaps), p)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint32
		for _, i := range inForce {
			ids = append(ids, i)
		}
		now := uint64(rng.IntN(1 << 40))
		for i := 0; i < 1500; i++ {
			if len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				switch rng.IntN(12) {
				case 0, 1: // a grant, living up to half a second
					n := int64(rng.IntN(6))
					exp := now + uint64(rng.IntN(int(500*time.Millisecond)))
					leases.Grant(id, n, exp)
					f.Model.GrantLease(id, n, exp)
					granted += n
				case 2: // an expiry
					n := int64(rng.IntN(4))
					got, want := leases.Expire(id, n), f.Model.ExpireLease(id, n)
					if got != want {
						t.Fatalf("seed %d round %d step %d: expiring %d of lease %d took %d, the model %d", seed, round, i, n, id, got, want)
					}
					expired += got
				}
			}
			now += uint64(rng.IntN(int(20 * time.Millisecond)))
			if err := f.Tally(frames[rng.IntN(len(frames))], now, rejected); err != nil {
				t.Fatalf("seed %d round %d frame %d at %d: %v", seed, round, i, now, err)
			}
		}
		for _, id := range ids {
			if got, want := leases.Tokens(id), f.Model.LeaseTokens(id); got != want {
				t.Errorf("seed %d round %d: lease %d holds %d tokens, the model %d", seed, round, id, got, want)
			}
			spentAtFleet -= leases.Tokens(id)
		}
	}
	spentAtFleet += granted - expired
	t.Logf("granted %d, expired %d, spent %d; rejected by reason: %v", granted, expired, spentAtFleet, rejected)
	if spentAtFleet == 0 || expired == 0 {
		t.Errorf("the traces spent %d and expired %d tokens: they never exercised the leases", spentAtFleet, expired)
	}
}

// TestLeaseNeverOverspends: both CPUs flood INVITEs into a fleet-scope
// class whose lease holds exactly n tokens, and the daemon's expiry runs
// beside them: every admitted call spent a token of its own, and the
// tokens admitted, expired and left add up to what was granted.
func TestLeaseNeverOverspends(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	f, leases := fleetInvites(t)
	invite := harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag).Without("Via"))
	lease := policy.LeaseOfLevel(int(cac.SIPInvite))

	var stop atomic.Bool
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		floodBothCPUsWhile(t, f.Objs.XdpCac, invite, func() bool { return !stop.Load() })
	}()
	const rounds, n = 200, 1000
	var expired int64
	for r := 0; r < rounds; r++ {
		leases.Grant(lease, n, math.MaxUint64)
		if r%2 == 1 { // take back what the flood has not spent yet, mid-flood
			testenv.Poll(5*time.Second, 0, func() bool { return leases.Tokens(lease) < n/2 })
			expired += leases.Expire(lease, n)
		}
		testenv.Poll(5*time.Second, 100*time.Microsecond, func() bool { return leases.Tokens(lease) <= 0 })
	}
	stop.Store(true)
	<-flooded
	inv := f.Stats(t).Classes[cac.SIPInvite]
	left := leases.Tokens(lease)
	t.Logf("%d INVITEs on 2 CPUs: %d admitted, %d expired, %d left of %d granted; %d refused", inv.Seen(), inv.Admitted, expired, left, rounds*n, inv.Rejected[cac.ReasonClass])
	if int64(inv.Admitted)+expired+left != rounds*n {
		t.Errorf("admitted %d + expired %d + left %d != granted %d", inv.Admitted, expired, left, rounds*n)
	}
	if left < 0 {
		t.Errorf("the lease was left at %d tokens", left)
	}
	if inv.Rejected[cac.ReasonClass] == 0 {
		t.Error("the flood never found the lease empty")
	}
}

// TestFleetCallAdmission: a fleet-scope call admission limit of 100 with
// pppoe 10 1 has each admitted PADI spend 10 × 10 ticks of the fleet's
// lease beside its local charge: the program and the model admit while
// the lease holds a PADI's cost, refuse for session-charges once it does
// not, and a refused PADI spends nothing.
func TestFleetCallAdmission(t *testing.T) {
	f := harness.NewFastPath(t, false)
	leases := mapLeases(t, f)
	p := harness.PolicyOf(t, harness.Ios("new-model", "limit 100", "pppoe 10 1")+
		"call-admission-scope: fleet\nfleet: {name: t, redis: {addresses: [/run/redis.sock]}}\n")
	if !p.CallAdmission.Fleet || len(p.Fleet) != 1 || p.Fleet[0].CPS != 1000 || p.Fleet[0].Burst != 1000 {
		t.Fatalf("fleet call admission: %+v %+v", p.CallAdmission, p.Fleet)
	}
	f.SetPolicy(t, p)
	in, err := maps.LeasesInForce(maps.PolicyMapsOf(&f.Objs.XdpMaps), p)
	if err != nil || in[0] != policy.LeaseCallAdmission {
		t.Fatalf("lease of the call admission limit: %v %v", in, err)
	}
	grant := func(n int64) { // living past the end of the test
		leases.Grant(policy.LeaseCallAdmission, n, math.MaxUint64)
		f.Model.GrantLease(policy.LeaseCallAdmission, n, math.MaxUint64)
	}
	padi := func(i int) []byte {
		return Frame(Ether{Src: [6]byte{2, 0, 0x5e, 0, 0x53, byte(i)}, Broadcast: true}, PPPoE{Code: PADI})
	}
	var seq []string
	now := uint64(10 * time.Second)
	run := func(n int) {
		for i := 0; i < n; i++ {
			seq = append(seq, outcomeAt(t, f, now, padi(len(seq))))
			now += uint64(time.Millisecond)
		}
	}
	grant(250)
	run(3) // two PADIs' cost, and 50 over
	now += uint64(2 * time.Second)
	run(1) // the local charges are gone; the lease's 50 are not enough
	grant(50)
	run(2)
	want := []string{"admitted", "admitted", "session-charges", "session-charges", "admitted", "session-charges"}
	if strings.Join(seq, " ") != strings.Join(want, " ") {
		t.Errorf("PADIs: %v, want %v", seq, want)
	}
	if got := leases.Tokens(policy.LeaseCallAdmission); got != 0 || f.Model.LeaseTokens(policy.LeaseCallAdmission) != 0 {
		t.Errorf("the lease holds %d (the model %d), want 0", got, f.Model.LeaseTokens(policy.LeaseCallAdmission))
	}
	if short := leases.Short(policy.LeaseCallAdmission); short != 3*100 {
		t.Errorf("short %d, want the cost of the 3 PADIs the lease refused (300)", short)
	}
}

// TestLeaseExpiresInTheFastPath: the fast path spends a lease's tokens
// until the lifetime of its newest grant ends and none after, whatever
// the lease still holds: the lease of a daemon that stopped runs out by
// itself. A later grant makes its tokens spendable again; an earlier
// expiry never shortens the one in force. The model agrees at each step.
func TestLeaseExpiresInTheFastPath(t *testing.T) {
	f, leases := fleetInvites(t)
	lease := policy.LeaseOfLevel(int(cac.SIPInvite))
	invite := func(i int) []byte {
		return harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", harness.CallID(i)))
	}
	t0 := uint64(100 * time.Second)
	grant := func(n int64, expires uint64) {
		leases.Grant(lease, n, expires)
		f.Model.GrantLease(lease, n, expires)
	}
	var seq []string
	call := func(at uint64) { seq = append(seq, outcomeAt(t, f, at, invite(len(seq)))) }
	grant(5, t0+uint64(time.Second))
	call(t0)                                   // within the lifetime
	call(t0 + uint64(999*time.Millisecond))    // still within
	call(t0 + uint64(time.Second))             // its end: none spent
	call(t0 + uint64(5*time.Second))           // a daemon stopped long ago
	grant(0, t0+uint64(2*time.Second))         // earlier than now: nothing to spend
	call(t0 + uint64(5*time.Second))           //
	grant(1, t0+uint64(6*time.Second))         // a renewal: the 3 left and 1 more
	call(t0 + uint64(5*time.Second))           //
	grant(0, t0+uint64(5500*time.Millisecond)) // earlier: leaves 6 s in force
	call(t0 + uint64(5800*time.Millisecond))   //
	want := "admitted admitted class class class admitted admitted"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("INVITEs: %s, want %s", got, want)
	}
	if got := leases.Tokens(lease); got != 2 || f.Model.LeaseTokens(lease) != 2 {
		t.Errorf("the lease holds %d (the model %d), want the 2 not spent", got, f.Model.LeaseTokens(lease))
	}
	if got := leases.Expires(lease); got != t0+uint64(6*time.Second) {
		t.Errorf("the lease expires at %d, want the latest grant's %d", got, t0+uint64(6*time.Second))
	}
}
