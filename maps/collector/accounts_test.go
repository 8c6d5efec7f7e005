package collector

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
)

func mapped(s string) netip.Prefix { return policy.Mapped(netip.MustParsePrefix(s)) }

func sourceRule(s string) policy.Rule { return policy.Rule{Prefix: mapped(s)} }

// TestNameBuckets: accounts and customers are named by the file's names,
// a customer once for all its accounts, those without a rate left out,
// and a prefix the names lack left out and said.
func TestNameBuckets(t *testing.T) {
	names := Names{
		sourceRule("192.0.2.0/24"):          {Account: "hq", Customer: "acme"},
		sourceRule("198.51.100.0/24"):       {Account: "lab", Customer: "acme"},
		sourceRule("2001:db8::/32"):         {Account: "v6", Customer: "free"},
		{Kind: policy.RuleCLI, User: "+44"}: {Account: "uk", Customer: "free"},
	}
	tokens := []maps.AccountTokens{
		{Rule: sourceRule("198.51.100.0/24"), Limited: true, Tokens: 1, Burst: 2, CustomerLimited: true, CustomerTokens: 5, CustomerBurst: 9},
		{Rule: sourceRule("192.0.2.0/24"), Limited: true, Tokens: 3, Burst: 4, CustomerLimited: true, CustomerTokens: 5, CustomerBurst: 9},
		{Rule: sourceRule("2001:db8::/32"), Customer: 1, Sessions: maps.SessionsInForce{Max: 3, Held: 1}},
		{Rule: policy.Rule{Kind: policy.RuleCLI, User: "+44"}, Limited: true, Tokens: 0, Burst: 1, Customer: 1},
	}
	accounts, customers, err := nameBuckets(tokens, names)
	if err != nil {
		t.Fatal(err)
	}
	want := []AccountBucket{{"acme", "hq", true, 3, 4, maps.SessionsInForce{}}, {"acme", "lab", true, 1, 2, maps.SessionsInForce{}},
		{"free", "uk", true, 0, 1, maps.SessionsInForce{}}, {"free", "v6", false, 0, 0, maps.SessionsInForce{Max: 3, Held: 1}}}
	if len(accounts) != 4 || accounts[0] != want[0] || accounts[1] != want[1] || accounts[2] != want[2] || accounts[3] != want[3] {
		t.Errorf("accounts %v, want %v", accounts, want)
	}
	if len(customers) != 1 || customers[0] != (CustomerBucket{"acme", true, 5, 9, maps.SessionsInForce{}}) {
		t.Errorf("customers %v", customers)
	}
	tokens = append(tokens, maps.AccountTokens{Rule: sourceRule("203.0.113.0/24"), Limited: true})
	accounts, _, err = nameBuckets(tokens, names)
	if len(accounts) != 4 || err == nil || !strings.Contains(err.Error(), "203.0.113.0/24") {
		t.Errorf("an unnamed prefix: %v, %v", accounts, err)
	}
}

// TestFileNames: the names come from the file, read again only when
// another file, or the same one again, is put in force.
func TestFileNames(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cac.yaml")
	write := func(name string) {
		t.Helper()
		body := "interfaces: [{name: eth0}]\ncustomers:\n  - name: acme\n    cps: 10\n    accounts:\n      - {name: " + name + ", source: 192.0.2.0/24, cps: 5}\n"
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hq")
	var f FileNames
	at := time.Unix(100, 0)
	n, err := f.Of(file, at)
	if err != nil || n[sourceRule("192.0.2.0/24")] != (AccountName{Account: "hq", Customer: "acme"}) {
		t.Fatalf("names %v, %v", n, err)
	}
	write("head-office")
	if n, _ := f.Of(file, at); n[sourceRule("192.0.2.0/24")].Account != "hq" {
		t.Errorf("the file was read again without a new load: %v", n)
	}
	if n, _ := f.Of(file, at.Add(time.Second)); n[sourceRule("192.0.2.0/24")].Account != "head-office" {
		t.Errorf("a new load kept the old names: %v", n)
	}
	if _, err := f.Of(filepath.Join(t.TempDir(), "gone.yaml"), at); err == nil {
		t.Error("no error for a missing file")
	}
}
