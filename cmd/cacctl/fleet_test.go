package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
)

func ptr[T any](v T) *T { return &v }

// fleetView is a box of three renewing two fleet-scope limits.
func fleetView() api.Fleet {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	return api.Fleet{
		Configured: true, Name: "east", Member: "box1", State: "fleet", OnFleetLost: "local",
		LostAfterMS: 2000, LeaseLifetimeMS: 1000, LeaseRenewMS: 100,
		LastRenewal: &at, LastRenewalAgeMS: ptr(int64(62)), RedisRTTUS: 418, RenewalsAnswered: 52114,
		Master: "192.0.2.61:6379", Failovers: 1, Members: 3,
		MembersSeen: []api.FleetMember{
			{Box: "box1", LastRenewal: at, LastRenewalAgeMS: 62},
			{Box: "box2", LastRenewal: at.Add(-40 * time.Millisecond), LastRenewalAgeMS: 102},
			{Box: "box-west-3", LastRenewal: at.Add(-3 * time.Second), LastRenewalAgeMS: 3062},
		},
		Limits: []api.FleetLimit{
			{Name: "acme", CPS: 100, Burst: 200, Tokens: 6, Granted: 10234, GrantedLocal: 212, Spent: 10180, Expired: 48, Returned: 48, DemandCPS: 33.27},
			{Name: "sip-invite", CPS: 30, Burst: 60, Tokens: 1, Granted: 41, Spent: 40, Expired: 0, Returned: 0, DemandCPS: 0.4},
		},
	}
}

func TestFleetText(t *testing.T) {
	unreachable := fleetView()
	unreachable.State, unreachable.LastRenewalAgeMS, unreachable.RedisRTTUS = "unreachable", ptr(int64(1480)), 2350
	unreachable.RenewalsFailed = 3
	unreachable.LastError = "fleet \"east\": dial tcp 192.0.2.9:6379: connect: connection refused"
	unreachable.MembersSeen, unreachable.MembersError = []api.FleetMember{}, "fleet \"east\": members: dial tcp 192.0.2.9:6379: connect: connection refused"
	unreachable.Limits = []api.FleetLimit{}
	cases := []struct {
		name string
		v    api.Fleet
		want string
	}{
		{"renewing", fleetView(), `
Fleet:          east
Member:         box1
State:          fleet
On fleet lost:  local, after 2s
Lease:          lifetime 1s, renew 100ms
Last renewal:   100ms ago
Redis RTT:      418µs
Renewals:       52114 answered, 0 failed
Master:         192.0.2.61:6379, 1 failovers seen
Members:        3

box         last renewal
box1        100ms ago
box2        100ms ago
box-west-3  3.1s ago

       limit  cps  burst  held  granted  spent  expired  returned  demand
        acme  100    200     6    10234  10180       48        48  33.3/s
  sip-invite   30     60     1       41     40        0         0   0.4/s
acme: 212 of the tokens granted were the box's own while the fleet was lost
`},
		{"unreachable", unreachable, `
Fleet:          east
Member:         box1
State:          unreachable
On fleet lost:  local, after 2s
Lease:          lifetime 1s, renew 100ms
Last renewal:   1.5s ago
Redis RTT:      2.4ms
Renewals:       52114 answered, 3 failed
Master:         192.0.2.61:6379, 1 failovers seen
Members:        3
Last error:     fleet "east": dial tcp 192.0.2.9:6379: connect: connection refused

Members seen in Redis: unknown (fleet "east": members: dial tcp 192.0.2.9:6379: connect: connection refused)

No fleet-scope limit in force
`},
		{"before any renewal", func() api.Fleet {
			v := unreachable
			v.LastRenewal, v.LastRenewalAgeMS, v.RenewalsAnswered, v.RedisRTTUS, v.MembersError = nil, nil, 0, 0, ""
			return v
		}(), `
Fleet:          east
Member:         box1
State:          unreachable
On fleet lost:  local, after 2s
Lease:          lifetime 1s, renew 100ms
Last renewal:   none yet
Redis RTT:      -
Renewals:       0 answered, 3 failed
Master:         192.0.2.61:6379, 1 failovers seen
Members:        3
Last error:     fleet "east": dial tcp 192.0.2.9:6379: connect: connection refused

Members seen in Redis: none

No fleet-scope limit in force
`},
		{"no fleet", api.NoFleet(), `
No fleet in force: the configuration has no fleet block
`},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := writeFleet(&b, c.v); err != nil {
			t.Fatal(err)
		}
		if got, want := b.String(), strings.TrimPrefix(c.want, "\n"); got != want {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", c.name, got, want)
		}
	}
}
