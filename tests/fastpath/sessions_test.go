package fastpath

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// capacityPolicy: two source accounts of one customer, the first with
// max-sessions 3 and a bucket tight enough to refuse now and then, the
// customer with max-sessions 4 over both; a cli account with 2 of its own
// in a customer without a limit; everyone else limited per source only.
func capacityPolicy(t testing.TB, accountMax uint32) policy.Policy {
	p := policy.Policy{
		Customers:        []bucket.Limit{bucket.Unlimited, bucket.Unlimited},
		CustomerSessions: []uint32{4, 0},
		Accounts: []policy.Account{
			{Kind: policy.RuleSource, Prefix: netip.MustParsePrefix("192.0.2.0/30"), Limit: harness.MustRate(t, 2, 3), MaxSessions: accountMax},
			{Kind: policy.RuleSource, Prefix: netip.MustParsePrefix("192.0.2.4/30")},
			{Kind: policy.RuleCLI, User: "44", Customer: 1, MaxSessions: 2},
		},
	}
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.5, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	return p
}

// TestCapacityDifferential: INVITEs from the accounts' sources and from
// strangers, with and without a CLI rule's user, some of them again with
// the Call-ID of one already up, retransmitted, or refused by a bucket,
// a few with no Call-ID at all;
// dialogs ended at random as the daemon ends them; max-sessions changed
// by applies. The program and the model agree on every verdict and on
// what every limit holds.
func TestCapacityDifferential(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, capacityPolicy(t, 3))
	rng := rand.New(rand.NewPCG(diffSeed(t), 0xcafe))
	sources := []string{"192.0.2.1", "192.0.2.2", "192.0.2.5", "192.0.2.9", "198.51.100.7"}
	froms := []string{"<sip:4420@example.com>;tag=1", "<sip:alice@example.com>;tag=2"}
	limits := []uint32{maps.AccountSessions(0), maps.AccountSessions(1), maps.AccountSessions(2), maps.CustomerSessions(0), maps.CustomerSessions(1)}
	invites := map[int][]byte{} // by call number, to send again
	refusals := map[cac.Reason]int{}
	peak := map[uint32]uint64{}
	now := 10 * second
	failures, noCallID := 0, 0
	for i := 0; i < 6_000; i++ {
		switch i {
		case 2_000:
			f.SetPolicy(t, capacityPolicy(t, 1)) // fewer than the account holds
		case 4_000:
			f.SetPolicy(t, capacityPolicy(t, 5))
		}
		now += uint64(rng.IntN(100)) * 1e6
		f.MustAt(t, now)
		if held := f.Model.SessionDialogs(); len(held) > 0 && rng.IntN(3) == 0 {
			slices.Sort(held)
			f.GiveBack(t, held[rng.IntN(len(held))])
			continue
		}
		call := i
		if len(invites) > 0 && rng.IntN(5) == 0 { // again: a retransmission, or a new CSeq after a challenge
			call = rng.IntN(i)
		}
		frame, ok := invites[call]
		if !ok || rng.IntN(2) == 0 {
			s := SIPRequest("INVITE", harness.ToNoTag).With("From", froms[rng.IntN(len(froms))]).
				With("Call-ID", fmt.Sprintf("cap%d@example.com", call)).With("CSeq", fmt.Sprintf("%d INVITE", 1+rng.IntN(2)))
			if rng.IntN(40) == 0 { // no Call-ID to tell its dialog by: refused where it would hold a session
				s = s.Without("Call-ID")
				noCallID++
			}
			frame = Frame(Ether{}, IPv4{Src: netip.MustParseAddr(sources[rng.IntN(len(sources))])}, UDP{Dst: 5060}, s)
			invites[call] = frame
		}
		d, err := f.Decide(frame)
		if err != nil {
			failures++
			t.Errorf("INVITE %d (call %d): %v", i, call, err)
			if failures > 20 {
				t.Fatal("too many differences")
			}
			continue
		}
		if d.Rejected {
			refusals[d.Reason]++
		}
		for _, l := range limits {
			got, want := f.SessionsHeld(t, l), f.Model.SessionsHeld(l)
			if got != want {
				t.Fatalf("INVITE %d: session limit %d holds %d, the model %d", i, l, got, want)
			}
			peak[l] = max(peak[l], got)
		}
	}
	t.Logf("refusals by reason %v; most held by each limit %v; %d INVITEs without a Call-ID", refusals, peak, noCallID)
	for _, r := range []cac.Reason{cac.ReasonCapacity, cac.ReasonAccount, cac.ReasonSource} {
		if refusals[r] == 0 {
			t.Errorf("no INVITE refused for %v", r)
		}
	}
	if peak[maps.CustomerSessions(0)] != 4 || peak[maps.AccountSessions(2)] != 2 || peak[maps.AccountSessions(0)] < 3 {
		t.Errorf("the limits were not reached: %v", peak)
	}
}
