package policy

import (
	"net/netip"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/config"
)

// TestAgentReserve: the shared levels keep a tenth of their burst for
// session agents when there are any and the file sets no reserve, the
// file's agent-reserve otherwise, and nothing without agents.
func TestAgentReserve(t *testing.T) {
	const agents = "realms: [{name: core, address: 198.51.100.1}]\n" +
		"session-agents: [{name: p, hostname: 198.51.100.2, realm-id: core}]\n"
	for _, c := range []struct {
		name, yaml string
		class, env uint64 // reserves, ns
	}{
		{"no agents", "classes: {sip-invite: {cps: 10, burst: 100}}\nenvironment: {cps: 20, burst: 50}\n", 0, 0},
		{"agents, default", agents + "classes: {sip-invite: {cps: 10, burst: 100}}\nenvironment: {cps: 20, burst: 50}\n", 10 * 1e8, 5 * 5e7},
		{"agents, set", agents + "classes: {sip-invite: {cps: 10, burst: 100, agent-reserve: 25}}\nenvironment: {cps: 20, burst: 50, agent-reserve: 0}\n", 25 * 1e8, 0},
	} {
		cfg, err := config.Parse("r.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p, err := Of(cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.ReserveNS[cac.SIPInvite] != c.class || p.ReserveNS[LevelEnvironment] != c.env {
			t.Errorf("%s: reserves %d (class), %d (environment); want %d, %d", c.name,
				p.ReserveNS[cac.SIPInvite], p.ReserveNS[LevelEnvironment], c.class, c.env)
		}
		if p.ReserveNS[cac.SIPInDialog] != 0 || p.ReserveNS[cac.ClassMalformed] != 0 {
			t.Errorf("%s: a sessionless class has a reserve", c.name)
		}
	}
}

// TestLimitsUserRules: a cli or called account makes the SIP request
// classes out of dialog limited, the only ones it reads; a source account
// makes every IP class limited.
func TestLimitsUserRules(t *testing.T) {
	l, _ := bucket.FromRate(1, 5)
	p := Policy{Customers: []bucket.Limit{l}, Accounts: []Account{{Kind: RuleCLI, User: "44", Limit: l}}}
	for _, c := range cac.Classes() {
		want := c >= cac.SIPInvite && c <= cac.SIPOther
		if p.Limits(c) != want {
			t.Errorf("a cli account: Limits(%v) = %v, want %v", c, p.Limits(c), want)
		}
	}
	p.Accounts = append(p.Accounts, Account{Prefix: netip.MustParsePrefix("192.0.2.0/24"), Limit: l})
	if !p.Limits(cac.L2TPICRQ) || p.Limits(cac.PPPoEPADI) || p.SourceAccounts() != 1 {
		t.Errorf("with a source account: l2tp-icrq %v, pppoe-padi %v, %d source accounts", p.Limits(cac.L2TPICRQ), p.Limits(cac.PPPoEPADI), p.SourceAccounts())
	}
}
