package bench

import (
	"net/netip"
	"testing"

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
	report(b, "frame", cases, 9, 100_000)
}
