package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/fleet"
)

// fleetMembersEvery is how often the daemon asks Redis which boxes renewed
// lately, for show fleet: the command reads the last answer and never
// waits on Redis itself.
const fleetMembersEvery = time.Second

// fleetMembers is the last answer to which boxes renewed lately and,
// with Sentinels, which master is in force.
type fleetMembers struct {
	seen []fleet.Member
	at   time.Time // of the last answer; zero before any
	err  error     // of the last question, nil when it was answered
	// master is the master the Sentinels last named ("" without them);
	// failovers counts the times it changed while this runner watched.
	master    string
	failovers uint64
}

// watchMembers asks client every fleetMembersEvery, each question within
// it, until ctx ends; done is closed then.
func (r *fleetRunner) watchMembers(ctx context.Context, client *fleet.Client, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(fleetMembersEvery)
	defer t.Stop()
	for {
		mctx, cancel := context.WithTimeout(ctx, fleetMembersEvery)
		// Not while the keeper holds Redis unreachable: a question that
		// times out would only queue up in it (fleet.Granter.Reachable).
		var seen []fleet.Member
		err := errFleetUnreachable
		if r.reachable() {
			seen, err = client.Members(mctx)
		}
		master, merr := client.Master(mctx)
		cancel()
		r.mu.Lock()
		if err == nil {
			r.members.seen, r.members.at, r.members.err = seen, time.Now(), nil
		} else if err != errFleetUnreachable {
			r.members.err = err
		}
		if merr == nil && master != "" {
			if r.members.master != "" && master != r.members.master {
				r.members.failovers++
				r.log.Warn("fleet master changed", "master", master, "was", r.members.master)
			}
			r.members.master = master
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// errFleetUnreachable is the members not asked while Redis is.
var errFleetUnreachable = errors.New("redis unreachable")

// reachable reports whether the keeper last heard from Redis.
func (r *fleetRunner) reachable() bool {
	r.mu.Lock()
	k := r.keeper
	r.mu.Unlock()
	return k != nil && k.Status().State == fleet.StateFleet
}

// view is what show fleet says: the keeper's state and leases and the
// members Redis held at the last answer, all read without waiting on
// Redis.
func (r *fleetRunner) view() api.Fleet {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	v := r.withMaster(r.viewLocked(now))
	if r.keeper == nil {
		return v
	}
	if r.members.err != nil {
		v.MembersError = r.members.err.Error()
	}
	if !r.members.at.IsZero() {
		v.MembersSeen = fleetMembersOf(r.members.seen, now)
	}
	return v
}

// withMaster is v with the master in force and the failovers seen, which
// a scrape reads too.
func (r *fleetRunner) withMaster(v api.Fleet) api.Fleet {
	if v.Configured {
		v.Master, v.Failovers = r.members.master, r.members.failovers
	}
	return v
}

// snapshot is the view of the keeper at now, taken under r.mu, without
// the members seen in Redis: what a scrape reads.
func (r *fleetRunner) snapshot(now time.Time) api.Fleet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.withMaster(r.viewLocked(now))
}

// viewLocked is snapshot with r.mu held.
func (r *fleetRunner) viewLocked(now time.Time) api.Fleet {
	if r.keeper == nil {
		return api.NoFleet()
	}
	var v api.Fleet
	r.keeper.Read(func(st fleet.Status, hs []*fleet.Holder) { v = fleetViewOf(r.cfg, r.box, st, hs, r.leases, now) })
	return v
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
	if !st.Renewed.IsZero() {
		at, age := st.Renewed, max(0, now.Sub(st.Renewed).Milliseconds())
		v.LastRenewal, v.LastRenewalAgeMS = &at, &age
	}
	v.RedisRTTUS = st.RTT.Microseconds()
	v.RenewalsAnswered, v.RenewalsFailed = st.Answered, st.Failed
	if st.Err != nil {
		v.LastError = st.Err.Error()
	}
	v.Members = st.Members
	for _, h := range holders {
		v.Limits = append(v.Limits, api.FleetLimit{
			Name: h.Limit.Name, CPS: h.Limit.CPS, Burst: h.Limit.Burst,
			Tokens: pool.Tokens(h.Lease), Granted: h.Granted, GrantedLocal: h.GrantedLocal, Spent: h.Spent(pool),
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

// job is the fleet keeper's state for status: failed when its
// configuration could not be put in force. A fleet lost is not a fault
// of the daemon's: show fleet gives it, and on-fleet-lost holds.
func (r *fleetRunner) job() api.Job { return r.room.job() }
