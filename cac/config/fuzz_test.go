package config

import (
	"strings"
	"testing"
)

// FuzzParse: any file is either a config or errors that name the file,
// never a panic, never both.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "malformed: pass\n", "classes:\n  sip-invite: {cps: 3, per-source: {cps: 1}}\n",
		"customers: [{name: a, cps: 2, accounts: [{name: b, source: 192.0.2.0/24, cps: 1}]}]\n",
		"session-agents: [{name: p, hostname: 192.0.2.2, realm-id: core}]\nrealms: [{name: core, address: 192.0.2.1}]\n",
		"ports: {sip: [5060, 70000]}\n", "stale-after: 1e10\n", "---\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.yaml", data)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("config %v and error %v", cfg, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// FuzzCallAdmission: any IOS block is parsed or refused with its line,
// and what is accepted is within the documented ranges.
func FuzzCallAdmission(f *testing.F) {
	for _, seed := range []string{
		"call admission new-model\ncall admission limit 200\ncall admission cpu-limit 60\ncall admission pppoe 10 1\n",
		"call admission limit 300\ncall admission vpdn 10 1\ncall admission load 100 1\n",
		"call admission pppoa 10 1\n", "call admission limit ten\n", "! a comment\ncall admission sip 1 300\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, block string) {
		var y strings.Builder
		y.WriteString("call-admission: |\n")
		for _, l := range strings.Split(block, "\n") {
			y.WriteString("  " + l + "\n")
		}
		cfg, err := Parse("f.yaml", []byte(y.String()))
		if err != nil {
			return
		}
		ca := cfg.CallAdmission
		if ca.Limit != nil && (*ca.Limit < 1 || *ca.Limit > 1e9) || ca.CPULimit != nil && (*ca.CPULimit < 1 || *ca.CPULimit > 100) {
			t.Fatalf("out of range: %+v", ca)
		}
		for name, c := range ca.Charges {
			if c.Lifetime <= 0 || c.Lifetime.Seconds() > MaxChargeLifetime || c.Charge < 1 {
				t.Fatalf("%s out of range: %+v", name, c)
			}
		}
	})
}
