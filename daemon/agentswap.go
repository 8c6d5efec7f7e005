package daemon

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// carryAgentAddrs adds to literal the addresses the agents of cfg resolved
// to under the configuration in force, at their new indexes: a reload
// must not leave an agent named by DNS out of the agents table while it
// resolves again.
func (d *Daemon) carryAgentAddrs(cfg *config.Config, literal map[netip.Addr]uint32) map[netip.Addr]uint32 {
	d.mu.Lock()
	a := d.agents
	d.mu.Unlock()
	if a == nil {
		return literal
	}
	old := a.addrsByName()
	for i, ag := range cfg.SessionAgents {
		carried := old[ag.Name]
		slices.SortFunc(carried, func(a, b netip.Addr) int { return a.Compare(b) })
		for _, addr := range carried {
			addr = netip.AddrFrom16(addr.As16())
			if _, ok := literal[addr]; !ok && len(literal) >= maps.MaxAgentAddrs {
				break // what fits, as resolve keeps: the apply must not fail on it
			}
			literal[addr] = uint32(i)
		}
	}
	return literal
}

// swapSIP puts in force the SIP jobs of cfg: the session keeper's timers,
// the 503 answerer and the agents monitor, in place of those of the
// configuration before (docs/design.md, "The daemon's rooms"). Each fails on its own:
// an answerer without its socket, or agents that cannot be pinged, leave
// their room failed with the error, until a configuration puts them
// right, and the event feed and the session keeper go on. The errors are
// joined.
func (d *Daemon) swapSIP(ctx context.Context, cfg *config.Config) error {
	d.sessions.configure(cfg)
	var ans *answerer
	var aerr error
	if rejectsWanted(cfg) { // a raw socket, and CAP_NET_RAW, only when some class answers
		if ans, aerr = d.newAnswerer(cfg); aerr != nil {
			d.answerRoom.fail(aerr)
		} else {
			d.answerRoom.running()
		}
	} else {
		d.answerRoom.off()
	}
	d.mu.Lock()
	oldAns := d.answer
	d.answer = ans
	d.mu.Unlock()
	d.feed.route(ans, nil) // the old monitor gets no event while it stops
	if oldAns != nil {
		oldAns.close()
	}
	gerr := d.swapAgents(ctx, cfg)
	d.mu.Lock()
	mon := d.agents
	d.mu.Unlock()
	d.feed.route(ans, mon)
	return errors.Join(aerr, gerr)
}

// swapAgents watches the session agents of cfg in place of those of the
// configuration before, carrying their statuses over. An index that now
// holds another agent starts with no stamp and a full bucket.
func (d *Daemon) swapAgents(ctx context.Context, cfg *config.Config) error {
	d.mu.Lock()
	old, cancel := d.agents, d.agentsCancel
	prev := d.agentStatuses // of a monitor that failed to start: kept for the next
	d.mu.Unlock()
	oldAgents, known := d.agentsCfg, d.agentsKnown
	if old != nil {
		prev = old.statuses()
		cancel()
		old.stop()
	}
	var moved []uint32
	for i := range max(len(oldAgents), len(cfg.SessionAgents)) {
		if known && (i >= len(oldAgents) || i >= len(cfg.SessionAgents) || oldAgents[i].Name != cfg.SessionAgents[i].Name) {
			moved = append(moved, uint32(i))
		}
	}
	if err := d.resetAgents(moved); err != nil {
		d.log.Warn("reset moved session agents", "err", err)
	}
	d.agentsCfg, d.agentsKnown = cfg.SessionAgents, true
	actx, acancel := context.WithCancel(ctx)
	a, err := d.startAgents(actx, cfg, prev)
	switch {
	case err != nil:
		acancel()
		a = nil
		d.agentsRoom.fail(err)
	case a == nil:
		d.agentsRoom.off()
	default:
		d.agentsRoom.running()
	}
	d.mu.Lock()
	d.agents, d.agentsCancel, d.agentStatuses = a, acancel, prev
	d.mu.Unlock()
	return err
}

// stopSIP stops the agents monitor and the answerer, the feed first no
// longer handing them events.
func (d *Daemon) stopSIP() {
	d.feed.route(nil, nil)
	d.mu.Lock()
	a, cancel, ans := d.agents, d.agentsCancel, d.answer
	d.agents, d.answer = nil, nil
	d.mu.Unlock()
	if a != nil {
		cancel()
		a.save()
		a.stop()
	}
	if ans != nil {
		ans.close()
	}
	d.agentsRoom.off()
	d.answerRoom.off()
}

// resetAgents empties the stamps, buckets and connection buckets of agent indexes, in the maps
// every attachment shares.
func (d *Daemon) resetAgents(idx []uint32) error {
	if len(idx) == 0 {
		return nil
	}
	p, err := loader.OpenShared(d.cfg.StateDir)
	if errors.Is(err, loader.ErrNothingAttached) {
		return nil // nothing holds stamps or buckets to reset
	}
	if err != nil {
		return err
	}
	defer p.Close()
	return maps.ResetAgents(p.AgentSeen, p.AgentBuckets, p.ConnectionBuckets, idx)
}
