package policy

import (
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/config"
)

// TestFleetOf: scope: fleet marks the levels it is on and lists them with
// the names every box keys them by in Redis; the fleet block takes its
// defaults.
func TestFleetOf(t *testing.T) {
	cfg, err := config.Parse("fleet.yaml", []byte(`interfaces: [{name: eth1}]
classes: {sip-invite: {cps: 30, scope: fleet}, pppoe-padi: {cps: 5}}
environment: {cps: 500, burst: 50, scope: fleet}
customers:
  - name: acme
    cps: 20
    scope: fleet
    accounts:
      - {name: pbx1, source: 198.51.100.0/24, cps: 10, scope: fleet}
      - {name: pbx2, source: 203.0.113.0/24, cps: 10}
fleet: {name: west, redis: {addresses: ["/run/redis.sock"]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Fleet
	if f.Lease.Lifetime != time.Second || f.Lease.Renew != 100*time.Millisecond || f.OnFleetLost != "local" || f.LostAfter != 2*time.Second {
		t.Errorf("fleet defaults: %+v", f)
	}
	p, err := Of(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]FleetLimit{
		"class/sip-invite":  {Name: "class/sip-invite", CPS: 30, Burst: 1800, Level: int(cac.SIPInvite), Customer: -1, Account: -1},
		"environment":       {Name: "environment", CPS: 500, Burst: 50, Level: LevelEnvironment, Customer: -1, Account: -1},
		"customer/acme":     {Name: "customer/acme", CPS: 20, Burst: 1200, Level: -1, Customer: 0, Account: -1},
		"account/acme/pbx1": {Name: "account/acme/pbx1", CPS: 10, Burst: 600, Level: -1, Customer: -1, Account: 0},
	}
	if len(p.Fleet) != len(want) {
		t.Fatalf("fleet limits %+v, want %d", p.Fleet, len(want))
	}
	for _, fl := range p.Fleet {
		if fl != want[fl.Name] {
			t.Errorf("fleet limit %+v, want %+v", fl, want[fl.Name])
		}
	}
	if !p.Levels[cac.SIPInvite].Fleet || p.Levels[cac.PPPoEPADI].Fleet || !p.Levels[LevelEnvironment].Fleet ||
		!p.Customers[0].Fleet || !p.Accounts[0].Limit.Fleet || p.Accounts[1].Limit.Fleet {
		t.Errorf("fleet marks: %+v", p)
	}
	ix := Indexes{Accounts: []uint32{7, 8}, Customers: []uint32{3}}
	for _, fl := range p.Fleet {
		got := fl.Lease(ix)
		switch fl.Name {
		case "customer/acme":
			if got != LeaseOfCustomer(3) {
				t.Errorf("customer's lease %d", got)
			}
		case "account/acme/pbx1":
			if got != LeaseOfAccount(7) {
				t.Errorf("account's lease %d", got)
			}
		}
	}
}
