package daemon

import (
	"context"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/fleet"
)

// fleetMembersTimeout bounds the question to Redis that show fleet asks:
// a Redis that does not answer must not hold the command, and the rest of
// the view is the daemon's own.
const fleetMembersTimeout = time.Second

// view is what show fleet says: the keeper's state and leases, taken
// under r.mu, and the members Redis holds, asked outside it so that a
// slow Redis never holds up a renewal.
func (r *fleetRunner) view(ctx context.Context) api.Fleet {
	r.mu.Lock()
	client := r.client // the one of the same keeper as the view
	v := r.viewLocked(time.Now())
	r.mu.Unlock()
	if client == nil || !v.Configured {
		return v
	}
	mctx, cancel := context.WithTimeout(ctx, fleetMembersTimeout)
	defer cancel()
	members, err := client.Members(mctx)
	if err != nil {
		// The client may have been closed by a reload meanwhile: the
		// error says so, and the rest of the view stands.
		v.MembersError = err.Error()
		return v
	}
	v.MembersSeen = fleetMembersOf(members, time.Now())
	return v
}

// snapshot is the view of the keeper at now, taken under r.mu, without
// the members seen in Redis: what a scrape reads.
func (r *fleetRunner) snapshot(now time.Time) api.Fleet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.viewLocked(now)
}

// viewLocked is snapshot with r.mu held.
func (r *fleetRunner) viewLocked(now time.Time) api.Fleet {
	if r.keeper == nil {
		return api.NoFleet()
	}
	return fleetViewOf(r.cfg, r.box, r.keeper.Status(), r.keeper.Holders(), r.leases, now)
}

// fleetViewOf is the view of a keeper of the fleet f, this box being
// box, whose leases live in pool, at now; the members seen in Redis are
// left empty for view to fill.
func fleetViewOf(f *config.Fleet, box string, st fleet.Status, holders []*fleet.Holder, pool fleet.Pool, now time.Time) api.Fleet {
	v := api.NoFleet()
	v.Configured = true
	v.Name, v.Member = f.Name, box
	v.State, v.OnFleetLost = string(st.State), f.OnFleetLost
	v.LostAfterMS = f.LostAfter.Milliseconds()
	v.LeaseLifetimeMS, v.LeaseRenewMS = f.Lease.Lifetime.Milliseconds(), f.Lease.Renew.Milliseconds()
	v.LastRenewal = st.LastOK
	v.LastRenewalAgeMS = max(0, now.Sub(st.LastOK).Milliseconds())
	v.RedisRTTUS = st.RTT.Microseconds()
	if st.Err != nil {
		v.LastError = st.Err.Error()
	}
	v.Members = st.Members
	for _, h := range holders {
		v.Limits = append(v.Limits, api.FleetLimit{
			Name: h.Limit.Name, CPS: h.Limit.CPS, Burst: h.Limit.Burst,
			Tokens: pool.Tokens(h.Lease), Granted: h.Granted, Spent: h.Spent(pool),
			Expired: h.Expired, Returned: h.Returned, DemandCPS: h.Demand,
		})
	}
	return v
}

// fleetMembersOf are the members Redis returned, with their ages at now.
func fleetMembersOf(members []fleet.Member, now time.Time) []api.FleetMember {
	out := make([]api.FleetMember, 0, len(members))
	for _, m := range members {
		out = append(out, api.FleetMember{Box: m.Box, LastRenewal: m.LastRenewal,
			LastRenewalAgeMS: max(0, now.Sub(m.LastRenewal).Milliseconds())})
	}
	return out
}
