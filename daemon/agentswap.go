package daemon

import (
	"context"
	"errors"
	"net/netip"
	"slices"

	"github.com/xdpcac/xdpcac/cac/agents"
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

// swapAgents watches the session agents of cfg in place of those of the
// configuration before, carrying their statuses over. An index that now
// holds another agent starts with no stamp and a full bucket.
func (d *Daemon) swapAgents(ctx context.Context, cfg *config.Config) error {
	d.mu.Lock()
	old, cancel := d.agents, d.agentsCancel
	d.mu.Unlock()
	var prev map[agents.TargetKey]agents.Status
	if old != nil {
		prev = old.statuses()
		cancel()
		old.stop()
		var moved []uint32
		for i := range max(len(old.cfg.SessionAgents), len(cfg.SessionAgents)) {
			if i >= len(old.cfg.SessionAgents) || i >= len(cfg.SessionAgents) ||
				old.cfg.SessionAgents[i].Name != cfg.SessionAgents[i].Name {
				moved = append(moved, uint32(i))
			}
		}
		if err := d.resetAgents(moved); err != nil {
			d.log.Warn("reset moved session agents", "err", err)
		}
	}
	actx, acancel := context.WithCancel(ctx)
	a, err := d.startAgents(actx, cfg, prev)
	if err != nil {
		acancel()
		a = nil
	}
	d.mu.Lock()
	d.agents, d.agentsCancel = a, acancel
	d.mu.Unlock()
	return err
}

func (d *Daemon) stopAgents() {
	d.mu.Lock()
	a, cancel := d.agents, d.agentsCancel
	d.agents = nil
	d.mu.Unlock()
	if a != nil {
		cancel()
		a.save()
		a.stop()
	}
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
