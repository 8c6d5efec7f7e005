package bench

import (
	"math"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// BenchmarkFleet prices a fleet-scope level against a local one: an
// INVITE of an account whose customer is held by its own bucket, or by
// the lease of the fleet's limit (docs/design.md, "Fleet"), admitted and
// refused, as ratios to an empty XDP program in the same round.
func BenchmarkFleet(b *testing.B) {
	customer := func(l bucket.Limit, fleet bool) policy.Policy {
		l.Fleet = fleet
		var p policy.Policy
		p.Customers = []bucket.Limit{l}
		p.Accounts = []policy.Account{{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Customer: 0}}
		if fleet {
			p.Fleet = []policy.FleetLimit{{Name: "customer/bench", CPS: 1, Burst: 1, Level: -1, Customer: 0, Account: -1}}
		}
		return p
	}
	open, shut := harness.MustRate(b, 1e9, 1e9), harness.MustRate(b, 0.001, 1)
	leased := func(p policy.Policy, tokens int64) *ebpf.Program {
		objs := loadProduction(b, p, policy.Inputs{})
		leases, err := maps.MapLeases(objs.Leases)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { leases.Close() })
		in, err := maps.LeasesInForce(maps.PolicyMapsOf(&objs.XdpMaps), p)
		if err != nil || len(in) != 1 {
			b.Fatalf("leases in force: %v %v", in, err)
		}
		leases.Grant(in[0], tokens, math.MaxUint64) // living past the benchmark
		return objs.XdpCac
	}
	invite := Frame(Ether{}, IPv4{Src: netip.MustParseAddr("198.51.100.7")}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag))
	cases := []benchCase{
		{"empty", "empty XDP_PASS", harness.PassProgram(b, "empty_pass"), invite},
		{"local-admitted", "sip-invite admitted, customer bucket of this box", production(b, customer(open, false)), invite},
		{"fleet-admitted", "sip-invite admitted, customer's fleet lease", leased(customer(open, true), 1<<50), invite},
		{"local-rejected", "sip-invite rejected, customer bucket empty", production(b, customer(shut, false)), invite},
		{"fleet-rejected", "sip-invite rejected, customer's fleet lease empty", leased(customer(shut, true), 0), invite},
	}
	report(b, "frame", cases, 15, 200_000)
}
