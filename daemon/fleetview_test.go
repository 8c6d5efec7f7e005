package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/fleet"
)

// pool is a fleet.Pool in memory: one word and one short count a lease.
type pool struct {
	tokens map[uint32]int64
	short  map[uint32]uint64
}

func (p *pool) Grant(i uint32, n int64, _ time.Time) { p.tokens[i] += n }
func (p *pool) Expire(i uint32, n int64) int64 {
	took := min(n, max(0, p.tokens[i]))
	p.tokens[i] -= took
	return took
}
func (p *pool) Tokens(i uint32) int64 { return p.tokens[i] }
func (p *pool) Short(i uint32) uint64 { return p.short[i] }

// granter grants what is asked, or fails with err.
type granter struct {
	err error
}

func (g *granter) Reachable() (bool, error) { return g.err == nil, g.err }

func (g *granter) Renew(ctx context.Context, box string, l fleet.Limit, want, back int64) (fleet.Grant, error) {
	if g.err != nil {
		return fleet.Grant{}, g.err
	}
	return fleet.Grant{Tokens: want, Members: 3, RTT: 420 * time.Microsecond}, nil
}

var testFleet = &config.Fleet{Name: "east", OnFleetLost: "local", LostAfter: 2 * time.Second,
	Lease: config.Lease{Lifetime: time.Second, Renew: 100 * time.Millisecond}}

// keeperAt is a keeper of two limits whose acme lease was asked for
// more than it held (refused calls) at each renewal up to t0, and then
// spent 7 tokens; with failing, a renewal at t0+500ms failed.
func keeperAt(t0 time.Time, failing bool) (*fleet.Keeper, *pool) {
	p := &pool{tokens: map[uint32]int64{}, short: map[uint32]uint64{}}
	g := &granter{}
	cfg := fleet.KeeperConfig{Box: "box1", Lifetime: time.Second, Renew: 100 * time.Millisecond,
		LostAfter: 2 * time.Second, OnLost: fleet.LostLocal}
	k := fleet.NewKeeper(cfg, g, p, t0.Add(-time.Second))
	k.SetLimits([]fleet.Limit{{Name: "acme", CPS: 100, Burst: 50}, {Name: "sip-invite", CPS: 30, Burst: 30}}, []uint32{0, 1})
	for _, at := range []time.Duration{-200 * time.Millisecond, -100 * time.Millisecond, 0} {
		k.Step(context.Background(), t0.Add(at))
		p.short[0] += 20 // refused for want of a token: demand
	}
	p.tokens[0] -= 7
	if failing {
		g.err = errors.New("dial tcp 192.0.2.9:6379: connect: connection refused")
		k.Step(context.Background(), t0.Add(500*time.Millisecond))
	}
	return k, p
}

func TestFleetView(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	k, p := keeperAt(t0, false)
	v := fleetViewOf(testFleet, "box1", k.Status(), k.Holders(), p, t0.Add(250*time.Millisecond))
	if !v.Configured || v.Name != "east" || v.Member != "box1" || v.State != "fleet" || v.OnFleetLost != "local" ||
		v.LostAfterMS != 2000 || v.LeaseLifetimeMS != 1000 || v.LeaseRenewMS != 100 ||
		v.LastRenewal == nil || !v.LastRenewal.Equal(t0) || *v.LastRenewalAgeMS != 250 || v.RedisRTTUS != 420 || v.LastError != "" || v.Members != 3 {
		t.Errorf("header: %+v", v)
	}
	if len(v.Limits) != 2 {
		t.Fatalf("limits: %+v", v.Limits)
	}
	a := v.Limits[0]
	if a.Name != "acme" || a.CPS != 100 || a.Burst != 50 || a.Tokens != p.tokens[0] || a.Spent != 7 ||
		a.Granted != a.Tokens+a.Spent+a.Expired || a.DemandCPS <= 0 {
		t.Errorf("acme: %+v", a)
	}
	if v.MembersSeen == nil || len(v.MembersSeen) != 0 {
		t.Errorf("members seen: %#v, want [] for view to fill", v.MembersSeen)
	}

	k, p = keeperAt(t0, true)
	v = fleetViewOf(testFleet, "box1", k.Status(), k.Holders(), p, t0.Add(time.Second))
	if v.State != "unreachable" || !strings.Contains(v.LastError, "connection refused") || *v.LastRenewalAgeMS != 1000 {
		t.Errorf("after a failed renewal: state %q, error %q, age %d", v.State, v.LastError, *v.LastRenewalAgeMS)
	}
}

// TestNoFleetView: without a fleet every key is there, and the lists are
// [] rather than null; so is what the runner's view says.
func TestNoFleetView(t *testing.T) {
	r := newFleetRunner(nil, t.TempDir())
	b, err := json.Marshal(r.view())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"configured", "fleet", "member", "state", "on_fleet_lost", "lost_after_ms", "lease_lifetime_ms",
		"lease_renew_ms", "last_renewal", "last_renewal_age_ms", "redis_rtt_us", "last_error",
		"renewals_answered", "renewals_failed", "master", "failovers", "members",
		"members_seen", "members_error", "limits"}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d keys, want %d: %s", len(got), len(want), b)
	}
	if got["configured"] != false || !strings.Contains(string(b), `"members_seen":[]`) || !strings.Contains(string(b), `"limits":[]`) {
		t.Errorf("no fleet: %s", b)
	}
}

func TestFleetMembersOf(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	got := fleetMembersOf([]fleet.Member{{Box: "box2", LastRenewal: now.Add(-80 * time.Millisecond)},
		{Box: "box3", LastRenewal: now.Add(5 * time.Millisecond)}}, now) // Redis's clock a little ahead
	if len(got) != 2 || got[0].Box != "box2" || got[0].LastRenewalAgeMS != 80 || got[1].LastRenewalAgeMS != 0 {
		t.Errorf("%+v", got)
	}
	if m := fleetMembersOf(nil, now); m == nil || len(m) != 0 {
		t.Errorf("none: %#v, want []", m)
	}
}

func TestFleetMetrics(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	k, p := keeperAt(t0, false)
	v := fleetViewOf(testFleet, "box1", k.Status(), k.Holders(), p, t0)
	c := newFleetCollector(func(time.Time) api.Fleet { return v })
	a, s := v.Limits[0], v.Limits[1]
	expected := strings.NewReplacer("GA", itoa(a.Granted), "TA", itoa(a.Tokens), "GS", itoa(s.Granted), "TS", itoa(s.Tokens)).Replace(`
# HELP xdpcac_fleet_lease_tokens Tokens this box's lease of a fleet-scope limit holds now.
# TYPE xdpcac_fleet_lease_tokens gauge
xdpcac_fleet_lease_tokens{limit="acme"} TA
xdpcac_fleet_lease_tokens{limit="sip-invite"} TS
# HELP xdpcac_fleet_members Boxes the last grant counted in the fleet, this one included.
# TYPE xdpcac_fleet_members gauge
xdpcac_fleet_members 3
# HELP xdpcac_fleet_renew_rtt_seconds Round trip of the last renewal Redis answered.
# TYPE xdpcac_fleet_renew_rtt_seconds gauge
xdpcac_fleet_renew_rtt_seconds 0.00042
# HELP xdpcac_fleet_renewals_total Requests to Redis for a lease, by how they ended: answered, or failed (unreachable, timed out, refused).
# TYPE xdpcac_fleet_renewals_total counter
xdpcac_fleet_renewals_total{result="answered"} 4
xdpcac_fleet_renewals_total{result="failed"} 0
# HELP xdpcac_fleet_state 1 for the state the fleet's leases are in (fleet, unreachable, lost), 0 for the others.
# TYPE xdpcac_fleet_state gauge
xdpcac_fleet_state{state="fleet"} 1
xdpcac_fleet_state{state="lost"} 0
xdpcac_fleet_state{state="unreachable"} 0
# HELP xdpcac_fleet_tokens_granted_total Tokens the fleet granted this box's lease of a limit.
# TYPE xdpcac_fleet_tokens_granted_total counter
xdpcac_fleet_tokens_granted_total{limit="acme"} GA
xdpcac_fleet_tokens_granted_total{limit="sip-invite"} GS
# HELP xdpcac_fleet_tokens_spent_total Tokens of this box's lease of a limit that admitted calls spent.
# TYPE xdpcac_fleet_tokens_spent_total counter
xdpcac_fleet_tokens_spent_total{limit="acme"} 7
xdpcac_fleet_tokens_spent_total{limit="sip-invite"} 0
`)
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), "xdpcac_fleet_lease_tokens", "xdpcac_fleet_members",
		"xdpcac_fleet_renew_rtt_seconds", "xdpcac_fleet_renewals_total", "xdpcac_fleet_state",
		"xdpcac_fleet_tokens_granted_total", "xdpcac_fleet_tokens_spent_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c); n != 3+2+2+1+6*2 {
		t.Errorf("%d series, want 20", n)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	none := newFleetCollector(func(time.Time) api.Fleet { return api.NoFleet() })
	if n := testutil.CollectAndCount(none); n != 0 {
		t.Errorf("without a fleet: %d series, want none", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestFleetViewBeforeRenewal: until Redis has answered a renewal, the
// last renewal and its age are null, not the year 1 nor the start; show
// fleet says none yet.
func TestFleetViewBeforeRenewal(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	g := &granter{err: errors.New("dial tcp 192.0.2.9:6379: connect: connection refused")}
	p := &pool{tokens: map[uint32]int64{}, short: map[uint32]uint64{}}
	k := fleet.NewKeeper(fleet.KeeperConfig{Box: "box1", Lifetime: time.Second, Renew: 100 * time.Millisecond,
		LostAfter: 2 * time.Second, OnLost: fleet.LostLocal}, g, p, t0)
	k.SetLimits([]fleet.Limit{{Name: "acme", CPS: 100, Burst: 50}}, []uint32{0})
	k.Step(context.Background(), t0.Add(100*time.Millisecond))
	v := fleetViewOf(testFleet, "box1", k.Status(), k.Holders(), p, t0.Add(time.Second))
	if v.LastRenewal != nil || v.LastRenewalAgeMS != nil {
		t.Errorf("no renewal answered yet: last renewal %v, age %v; want null", v.LastRenewal, v.LastRenewalAgeMS)
	}
	b, _ := json.Marshal(v)
	if !strings.Contains(string(b), `"last_renewal":null,"last_renewal_age_ms":null`) {
		t.Errorf("-o json: %s", b)
	}
}
