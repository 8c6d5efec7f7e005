package bench

import (
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// BenchmarkUserRules measures what the authentication rules cost an
// INVITE (docs/design.md, "Authentication rules"): admitted by a source
// account, by a cli account (the header walk, then the trie), and from a
// stranger under a policy that has cli rules, each as a ratio to the
// empty program of the same round.
func BenchmarkUserRules(b *testing.B) {
	acct := func(kind policy.RuleKind, rule string) policy.Account {
		a := policy.Account{Kind: kind, Limit: harness.MustRate(b, 1e9, 1e9)}
		if kind == policy.RuleSource {
			a.Prefix = netip.MustParsePrefix(rule)
		} else {
			a.User = rule
		}
		return a
	}
	customers := []bucket.Limit{harness.MustRate(b, 1e9, 1e9)}
	source := production(b, policy.Policy{Customers: customers, Accounts: []policy.Account{acct(policy.RuleSource, "192.0.2.0/24")}})
	cli := production(b, policy.Policy{Customers: customers, Accounts: []policy.Account{acct(policy.RuleCLI, "alice"), acct(policy.RuleCalled, "0800")}})
	empty := harness.PassProgram(b, "empty_pass")
	invite := func(src string) []byte {
		return Frame(Ether{}, IPv4{Src: netip.MustParseAddr(src)}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag))
	}
	cases := []benchCase{
		{"empty", "empty XDP_PASS", empty, invite("192.0.2.1")},
		{"invite-source-account", "sip-invite admitted by a source account", source, invite("192.0.2.1")},
		{"invite-cli-account", "sip-invite admitted by a cli account", cli, invite("192.0.2.1")},
		{"invite-no-rule", "sip-invite of no rule, the policy has cli and called rules", cli, Frame(Ether{}, IPv4{}, UDP{Dst: 5060},
			SIPRequest("INVITE", harness.ToNoTag).With("From", "<sip:bob@example.com>;tag=1"))},
	}
	const rounds, repeat = 9, 100_000
	ns := make([][]float64, len(cases))
	ratios := make([][]float64, len(cases))
	for b.Loop() {
		for r := 0; r < rounds; r++ {
			var base float64
			for i, c := range cases {
				start := time.Now()
				if _, _, err := c.prog.Benchmark(c.frame, repeat, nil); err != nil {
					b.Fatal(err)
				}
				v := float64(time.Since(start).Nanoseconds()) / repeat
				if i == 0 {
					base = v
				}
				ns[i] = append(ns[i], v)
				ratios[i] = append(ratios[i], v/base)
			}
		}
	}
	fmt.Fprintf(os.Stdout, "\n%d rounds of %d runs each; medians over rounds\n| frame | ns/packet | × empty |\n|---|---:|---:|\n", rounds, repeat)
	for i, c := range cases {
		fmt.Fprintf(os.Stdout, "| %s | %.1f | %.2f |\n", c.name, median(ns[i]), median(ratios[i]))
		b.ReportMetric(median(ratios[i]), c.slug+"-x-empty")
	}
}
