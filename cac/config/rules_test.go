package config

import (
	"strings"
	"testing"
)

const rulesFile = `interfaces: [{name: veth0}]
customers:
  - name: trunks
    accounts:
      - {name: office, source: 192.0.2.0/28, cps: 5}
      - {name: alice, cli: "+4420", cps: 2}
      - {name: alice-london, cli: "+44207", cps: 1}
      - {name: freephone, called: "0800", cps: 3}
`

func TestUserRules(t *testing.T) {
	c, err := Parse("r.yaml", []byte(rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	a := c.Customers[0].Accounts
	if a[0].Source.String() != "192.0.2.0/28" || a[1].CLI != "+4420" || a[2].CLI != "+44207" || a[3].Called != "0800" ||
		a[1].Source.IsValid() || a[3].CLI != "" {
		t.Errorf("accounts = %+v", a)
	}
}

func TestUserRuleRefusals(t *testing.T) {
	head := "interfaces: [{name: veth0}]\ncustomers:\n  - name: c\n    accounts:\n"
	for _, tc := range []struct {
		name, accounts, want string
	}{
		{"two rules", "      - name: a\n        cli: \"1\"\n        called: \"2\"\n",
			"r.yaml:7:17: customers[0].accounts[0].called: an account has one of source, cli and called; this one also has cli"},
		{"source and cli", "      - name: a\n        source: 192.0.2.1\n        cli: \"2\"\n",
			"r.yaml:7:14: customers[0].accounts[0].cli: an account has one of source, cli and called; this one also has source"},
		{"none", "      - name: a\n        cps: 1\n",
			"r.yaml:5:9: customers[0].accounts[0].source: is required (or cli, or called)"},
		{"too long", "      - name: a\n        cli: \"" + strings.Repeat("1", 33) + "\"\n",
			"r.yaml:6:14: customers[0].accounts[0].cli: must be 1 to 32 characters, got 33"},
		{"empty", "      - name: a\n        called: \"\"\n",
			"r.yaml:6:17: customers[0].accounts[0].called: must be 1 to 32 characters, got 0"},
		{"bad character", "      - name: a\n        called: \"08 00\"\n",
			"r.yaml:6:17: customers[0].accounts[0].called: \"08 00\": only digits, letters"},
		{"same cli twice", "      - {name: a, cli: \"44\"}\n      - {name: b, cli: \"44\"}\n",
			"r.yaml:6:24: customers[0].accounts[1].cli: cli 44 belongs to two accounts: a and b"},
		{"same called twice", "      - {name: a, called: \"0800\"}\n  - name: d\n    accounts:\n      - {name: b, called: \"0800\"}\n",
			"r.yaml:8:27: customers[1].accounts[0].called: called 0800 belongs to two accounts: a and b"},
	} {
		_, err := Parse("r.yaml", []byte(head+tc.accounts))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	// The same prefix as a cli and as a called number are two rules.
	if _, err := Parse("r.yaml", []byte(head+"      - {name: a, cli: \"44\"}\n      - {name: b, called: \"44\"}\n")); err != nil {
		t.Errorf("cli 44 and called 44: %v", err)
	}
}
