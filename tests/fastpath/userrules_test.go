package fastpath

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/admission"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// userRulesPolicy has source, cli and called accounts, nested prefixes of
// each kind, in three customers, and a per-source bucket for everyone
// else: tight enough that every level refuses now and then.
func userRulesPolicy(t testing.TB) policy.Policy {
	acct := func(kind policy.RuleKind, rule string, customer int, burst float64) policy.Account {
		a := policy.Account{Kind: kind, Limit: harness.MustRate(t, 2, burst), Customer: customer}
		if kind == policy.RuleSource {
			a.Prefix = netip.MustParsePrefix(rule)
		} else {
			a.User = rule
		}
		return a
	}
	p := policy.Policy{
		Customers: []bucket.Limit{harness.MustRate(t, 3, 4), harness.MustRate(t, 3, 4), bucket.Unlimited},
		Accounts: []policy.Account{
			acct(policy.RuleSource, "192.0.2.0/28", 0, 3),
			acct(policy.RuleSource, "192.0.2.0/30", 1, 2),
			acct(policy.RuleCLI, "44", 0, 3),
			acct(policy.RuleCLI, "4420", 1, 2),
			acct(policy.RuleCLI, "+1", 2, 2),
			acct(policy.RuleCalled, "0800", 1, 3),
			acct(policy.RuleCalled, "08001", 2, 2),
			acct(policy.RuleCalled, "9", 0, 2),
		},
	}
	for _, c := range []cac.Class{cac.SIPInvite, cac.SIPOptions, cac.SIPRegister, cac.SIPOther, cac.SIPInDialog} {
		p.PerSource[c] = policy.PerSource{Limit: harness.MustRate(t, 0.5, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	}
	return p
}

// userRequest is a random SIP request whose From, P-Asserted-Identity and
// Request-URI users come from a small alphabet of the policy's prefixes,
// in the forms the readers must take.
func userRequest(rng *rand.Rand, i int) []byte {
	users := []string{"44", "4420", "44207946", "4", "+1555", "+2", "0800", "08001234", "080", "9", "99", "alice",
		"123456789012345678901234567890123456", ""}
	user := func() string { return users[rng.IntN(len(users))] }
	uri := func(u string) string {
		switch {
		case u == "":
			return "sip:example.com"
		case rng.IntN(4) == 0:
			return "tel:" + u + ";phone-context=example.com"
		case rng.IntN(3) == 0:
			return "sips:" + u + "@example.com"
		}
		return "sip:" + u + "@example.com;user=phone"
	}
	value := func(u string) string {
		switch rng.IntN(5) {
		case 0:
			return `"Alice \"<sip:0800@x>\"" <` + uri(u) + ">;tag=1"
		case 1:
			return "Alice <" + uri(u) + ">;tag=2"
		case 2:
			return uri(u) + ";tag=3"
		case 3:
			return "  <" + uri(u) + ">"
		}
		return "<" + uri(u) + ">;tag=4"
	}
	methods := []string{"INVITE", "OPTIONS", "REGISTER", "MESSAGE", "invite"}
	to := harness.ToNoTag
	if rng.IntN(8) == 0 {
		to = harness.ToTag // in dialog: no rule applies
	}
	s := SIPRequest(methods[rng.IntN(len(methods))], to).Without("From")
	s.URI = uri(user())
	s = s.With("Call-ID", fmt.Sprintf("u%d@192.0.2.1", i))
	from := []string{"From", "f", "from", "FROM"}[rng.IntN(4)]
	s.Headers = append(s.Headers, from+": "+value(user()))
	if rng.IntN(3) == 0 {
		pai := []string{"P-Asserted-Identity", "p-asserted-identity"}[rng.IntN(2)]
		s.Headers = append(s.Headers, pai+": "+value(user()))
	}
	rng.Shuffle(len(s.Headers), func(a, b int) { s.Headers[a], s.Headers[b] = s.Headers[b], s.Headers[a] })
	srcs := []string{"192.0.2.1", "192.0.2.9", "203.0.113.5", "203.0.113.6"}
	return Frame(Ether{}, IPv4{Src: netip.MustParseAddr(srcs[rng.IntN(len(srcs))])}, UDP{Dst: 5060}, s)
}

// TestUserRulesDifferential holds the XDP object to the model over random
// requests that cli, called and source accounts identify, nested prefixes
// included, a third of them mutated, under all three kinds and then
// without the called and without the cli ones: every verdict and reason
// agree, and the trace shows an account of each kind refusing requests
// (its bucket or its customer's), so each kind of rule decided.
func TestUserRulesDifferential(t *testing.T) {
	f := harness.NewFastPath(t, false)
	f.SetPolicy(t, userRulesPolicy(t))
	seed := diffSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x51f15eed))
	decided := map[policy.RuleKind]int{}
	refusals := map[cac.Reason]int{}
	now := 10 * second
	failures := 0
	full := userRulesPolicy(t)
	for i := 0; i < 24_000; i++ {
		// The last part under the policy's cli accounts alone, then its
		// called ones alone: the fast path reads only what a kind of
		// rule in force compares.
		switch i {
		case 16_000, 20_000:
			kind := map[int]policy.RuleKind{16_000: policy.RuleCLI, 20_000: policy.RuleCalled}[i]
			p := full
			p.Accounts = nil
			for _, a := range full.Accounts {
				if a.Kind == kind || a.Kind == policy.RuleSource {
					p.Accounts = append(p.Accounts, a)
				}
			}
			f.SetPolicy(t, p)
		}
		now += uint64(rng.IntN(200)) * 1e6
		f.MustAt(t, now)
		frame := userRequest(rng, i)
		if i%3 == 0 { // the readers must agree on nearly right values too
			frame = mutate(rng, frame)
		}
		_, msg := classify.ClassifySIP(frame, f.Model.Ports)
		users := admission.Users{CLI: classify.CLIOf(msg), Called: classify.CalledOf(msg)}
		d, err := f.Decide(frame)
		if err != nil {
			failures++
			t.Errorf("frame %d (%q): %v", i, frame, err)
			if failures > 20 {
				t.Fatal("too many differences")
			}
			continue
		}
		if d.Rejected {
			refusals[d.Reason]++
		}
		if d.Rejected && (d.Reason == cac.ReasonAccount || d.Reason == cac.ReasonCustomer) {
			if kind, ok := f.Model.RuleOf(d.Class, classify.SourceOf(frame), users); ok {
				decided[kind]++
			}
		}
	}
	t.Logf("refusals by reason %v; by the kind of the account's rule %v", refusals, decided)
	for _, k := range []policy.RuleKind{policy.RuleSource, policy.RuleCLI, policy.RuleCalled} {
		if decided[k] == 0 {
			t.Errorf("no request was refused by an account of a %v rule", k)
		}
	}
	if refusals[cac.ReasonSource] == 0 {
		t.Error("no request without an account was refused by its per-source bucket")
	}
}

// TestUserAccountKeepsBucket: an apply that moves a cli account keeps its
// bucket (its index is read back from the user trie in force), and the
// one that drops it frees the CLI for the source prefix.
func TestUserAccountKeepsBucket(t *testing.T) {
	f := harness.NewFastPath(t, false)
	p := userRulesPolicy(t)
	f.SetPolicy(t, p)
	f.MustAt(t, 10*second)
	invite := func(i int) []byte {
		s := SIPRequest("INVITE", harness.ToNoTag).With("From", "<sip:+15551234@example.com>;tag=1").With("Call-ID", fmt.Sprintf("k%d@x", i))
		return Frame(Ether{}, IPv4{Src: netip.MustParseAddr("192.0.2.9")}, UDP{Dst: 5060}, s)
	}
	offer := func(from, n int) (reasons map[cac.Reason]int) {
		reasons = map[cac.Reason]int{}
		for i := from; i < from+n; i++ {
			d, err := f.Decide(invite(i))
			if err != nil {
				t.Fatal(err)
			}
			if d.Rejected {
				reasons[d.Reason]++
			}
		}
		return reasons
	}
	if r := offer(0, 3); r[cac.ReasonAccount] != 1 {
		t.Fatalf("cli +1 (burst 2): refused %v, want 1 for account", r)
	}
	// The same accounts in another order: the cli account's bucket stays empty.
	p.Accounts = append([]policy.Account{p.Accounts[4]}, append(p.Accounts[:4:4], p.Accounts[5:]...)...)
	f.MustAt(t, 10*second+1)
	f.SetPolicy(t, p)
	if r := offer(10, 1); r[cac.ReasonAccount] != 1 {
		t.Errorf("after a reordering apply: refused %v, want account (the bucket kept)", r)
	}
	// Without the cli rule, 192.0.2.9 is the /28 source account's, whose bucket is full.
	p.Accounts = p.Accounts[1:]
	f.SetPolicy(t, p)
	if r := offer(20, 1); len(r) != 0 {
		t.Errorf("without the cli rule: refused %v, want admitted by the source account", r)
	}
}

// TestUserRuleRejectRecords: a reject record names the cli or called rule
// whose account held the request, and none for a source account's; an
// apply without user rules leaves nothing to name.
func TestUserRuleRejectRecords(t *testing.T) {
	f := harness.NewFastPath(t, false)
	p := userRulesPolicy(t)
	f.SetPolicy(t, p)
	f.MustAt(t, 10*second)
	invite := func(i int, src, from, ruri string) []byte {
		s := SIPRequest("INVITE", harness.ToNoTag).With("From", "<sip:"+from+"@example.com>;tag=1").With("Call-ID", fmt.Sprintf("r%d@x", i))
		s.URI = "sip:" + ruri + "@example.com"
		return Frame(Ether{}, IPv4{Src: netip.MustParseAddr(src)}, UDP{Dst: 5060}, s)
	}
	for i := 0; i < 4; i++ {
		for _, frame := range [][]byte{
			invite(i, "203.0.113.5", "442079", "bob"),     // cli 4420 (burst 2)
			invite(10+i, "203.0.113.6", "alice", "08001"), // called 08001 (burst 2)
			invite(20+i, "192.0.2.9", "alice", "bob"),     // source 192.0.2.0/28 (burst 3)
		} {
			if err := f.Check(frame); err != nil {
				t.Fatal(err)
			}
		}
	}
	pm := maps.PolicyMapsOf(&f.Objs.XdpMaps)
	recs, err := maps.ReadRejects(maps.RejectTablesOf(&f.Objs.XdpMaps))
	if err == nil {
		err = maps.NameRules(pm, recs)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Source] = r.Reason.String() + " " + r.Rule
	}
	want := map[string]string{"203.0.113.5": "account cli 4420", "203.0.113.6": "account called 08001", "192.0.2.9": "account "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records by source %v, want %v", got, want)
	}

	// Without user rules the scratch is emptied: a source account's
	// reject names no rule the request before it had.
	if err := f.Check(invite(29, "203.0.113.5", "442079", "bob")); err != nil { // the scratch holds cli 4420
		t.Fatal(err)
	}
	p.Accounts = p.Accounts[:2]
	f.SetPolicy(t, p)
	f.MustAt(t, 20*second)
	for i := 0; i < 4; i++ {
		if err := f.Check(invite(30+i, "192.0.2.1", "442079", "bob")); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ = maps.ReadRejects(maps.RejectTablesOf(&f.Objs.XdpMaps))
	for _, r := range recs {
		if r.Source == "192.0.2.1" && r.RuleKind != policy.RuleSource {
			t.Errorf("a source account's record after an apply without user rules: %+v", r)
		}
	}
}
