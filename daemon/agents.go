package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// How often the monitor looks at its targets, and resolves hostnames.
const (
	agentTick    = 100 * time.Millisecond
	agentResolve = 30 * time.Second
)

// sipAgents is the agents monitor of one configuration: it resolves the
// session agents' hostnames into the fast path's agents table, pings each
// target (destination and realm) from its realm, applies the Oracle rules
// to the pings and to the agents' responses the SIP event feed hands it,
// and answers the INVITEs refused at egress on their behalf.
type sipAgents struct {
	stateDir string
	log      *slog.Logger
	counts   *answerCounts // the daemon's, across reloads
	cfg      *config.Config
	realms   map[string]config.Realm
	resolver *sipd.Resolver
	pingers  map[string]*sipd.Pinger // by realm
	pinned   *loader.Pinned          // the shared maps, of any attachment

	mu       sync.Mutex
	targets  map[agents.TargetKey]*agents.Target
	index    map[agents.TargetKey]int // agent index of each target
	pinging  map[agents.TargetKey]bool
	seen     []uint64 // last request stamps already applied
	resolved time.Time
	dirty    bool // statuses changed since the last save

	// egress answers INVITEs refused at egress, when some agent may have
	// one refused; states is what writeStates last wrote.
	egress       *egressAnswerer
	egressCounts *answerCounts // the daemon's
	forged       *atomic.Uint64
	statesMu     sync.Mutex // writeStates runs from the ticks and the event reader
	states       []bool
	wg           sync.WaitGroup // run and pings
	events       atomic.Uint64  // agents' responses the fast path handed up
}

// maxRetryAfter caps what a Retry-After can hold an agent out for: a
// forged or broken answer must not take a peer out for years.
const maxRetryAfter = time.Hour

func capRetry(d time.Duration) time.Duration { return min(d, maxRetryAfter) }

// savedTarget is one target in the agents file (api.Paths).
type savedTarget struct {
	Agent       string         `json:"agent"`
	Destination netip.AddrPort `json:"destination"`
	Realm       string         `json:"realm"`
	Status      agents.Status  `json:"status"`
}

// startAgents starts watching the agents of cfg, with statuses carried
// over from before (a reload, or the file a previous daemon left).
func (d *Daemon) startAgents(ctx context.Context, cfg *config.Config, prev map[agents.TargetKey]agents.Status) (*sipAgents, error) {
	if len(cfg.SessionAgents) == 0 {
		return nil, nil
	}
	p, err := loader.OpenShared(d.cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("session agents: %w", err)
	}
	a := &sipAgents{
		stateDir: d.cfg.StateDir, log: d.log, egressCounts: &d.egressAnswers, forged: &d.forged, cfg: cfg, realms: map[string]config.Realm{}, pinned: p,
		resolver: agentResolver(cfg.DNSServer, d.cfg.Netns),
		pingers:  map[string]*sipd.Pinger{},
		targets:  map[agents.TargetKey]*agents.Target{}, index: map[agents.TargetKey]int{},
		pinging: map[agents.TargetKey]bool{}, seen: make([]uint64, len(cfg.SessionAgents)),
	}
	if prev == nil {
		prev = loadSavedTargets(api.PathsOf(d.cfg.StateDir).Agents)
	}
	for _, r := range cfg.Realms {
		a.realms[r.Name] = r
	}
	for _, ag := range cfg.SessionAgents {
		for _, realm := range realmsOf(ag) {
			if _, ok := a.pingers[realm]; ok {
				continue
			}
			r := a.realms[realm]
			var pg *sipd.Pinger
			err := loader.InNetns(d.cfg.Netns, func() error {
				var err error
				pg, err = sipd.NewPinger(netip.AddrPortFrom(r.Address, 0), agents.ContactHost(r), sipd.WithT1(cfg.SIPT1),
					sipd.WithLogger(d.log))
				return err
			})
			if err != nil {
				a.stop()
				return nil, fmt.Errorf("session agent %s: pings from realm %s: %w", ag.Name, realm, err)
			}
			a.pingers[realm] = pg
		}
	}
	if egressWanted(cfg) {
		if a.egress, err = d.newEgressAnswerer(); err != nil {
			a.stop()
			return nil, err
		}
	}
	// Stamps already in the map are old news: only newer ones are
	// requests that bring an agent back.
	if seen, err := maps.ReadAgentSeen(p.AgentSeen, len(cfg.SessionAgents)); err == nil {
		a.seen = seen
	}
	a.resolve(ctx, prev)
	a.writeStates()
	a.wg.Add(1)
	go a.run(ctx)
	return a, nil
}

// addrsByName are the addresses each agent resolved to, for the next
// configuration to keep in the agents table while it resolves again.
func (a *sipAgents) addrsByName() map[string][]netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]netip.Addr{}
	for k := range a.targets {
		out[k.Agent] = append(out[k.Agent], k.Destination.Addr())
	}
	return out
}

// realmsOf are the realms an agent is pinged from.
func realmsOf(a config.SessionAgent) []string {
	if a.RealmID == "*" {
		return a.EgressRealmIDs
	}
	return []string{a.RealmID}
}

// resolve turns every agent's hostname into destinations, keeps the
// targets of those that stay, adds the new ones (with a status from prev
// when it has one), and writes the agents table.
func (a *sipAgents) resolve(ctx context.Context, prev map[agents.TargetKey]agents.Status) {
	addrs := map[netip.Addr]uint32{}
	keep := map[agents.TargetKey]bool{}
	now := time.Now()
	for i, ag := range a.cfg.SessionAgents {
		dests, err := a.resolver.Resolve(ctx, ag.Hostname, ag.Port, ag.PingAllAddresses)
		if err != nil {
			a.log.Warn("resolve session agent", "agent", ag.Name, "hostname", ag.Hostname, "err", err)
			// Keep what was resolved before rather than forget the agent.
			a.mu.Lock()
			for k := range a.targets {
				if k.Agent == ag.Name {
					keep[k] = true
					addrs[netip.AddrFrom16(k.Destination.Addr().As16())] = uint32(i)
				}
			}
			a.mu.Unlock()
			continue
		}
		rules := agents.RulesOf(ag)
		kept := 0
		for _, dest := range dests {
			addr := netip.AddrFrom16(dest.Addr().As16())
			if _, ok := addrs[addr]; !ok && len(addrs) >= maps.MaxAgentAddrs {
				continue // no room: the table keeps the first (sorted) addresses
			}
			kept++
			addrs[addr] = uint32(i)
			for _, realm := range realmsOf(ag) {
				k := agents.TargetKey{Agent: ag.Name, Destination: dest, Realm: realm}
				keep[k] = true
				a.mu.Lock()
				if _, ok := a.targets[k]; !ok {
					if st, ok := prev[k]; ok {
						a.targets[k] = agents.RestoreTarget(rules, st)
					} else {
						a.targets[k] = agents.NewTarget(rules, now)
					}
					a.index[k] = i
				}
				a.mu.Unlock()
			}
		}
		if kept < len(dests) {
			// A name of thousands of addresses must not make the table,
			// and so every apply after it, fail: it keeps what fits.
			a.log.Warn("session agent has more addresses than the agents table holds; the first are kept, the rest are strangers",
				"agent", ag.Name, "hostname", ag.Hostname, "addresses", len(dests), "kept", kept, "table", maps.MaxAgentAddrs)
		}
	}
	a.mu.Lock()
	for k := range a.targets {
		if !keep[k] {
			delete(a.targets, k)
			delete(a.index, k)
		}
	}
	a.resolved = now
	a.mu.Unlock()
	if err := maps.WriteAgentAddrs(a.pinned.Agents, addrs); err != nil {
		a.log.Error("write the session agents table", "err", err)
	}
}

// run pings what is due and follows the agents' requests until ctx ends.
func (a *sipAgents) run(ctx context.Context) {
	defer a.wg.Done()
	every(ctx, agentTick, func() {
		if time.Since(a.resolved) > agentResolve {
			a.resolve(ctx, nil)
		}
		a.requestsSeen()
		a.pingDue(ctx)
		a.writeStates()
		if a.egress != nil {
			a.egress.flush(time.Now(), false)
		}
		a.save()
	})
}

// requestsSeen applies the fast path's last-request stamps: any request
// from an agent brings it back, and defers keep-alive pings.
func (a *sipAgents) requestsSeen() {
	seen, err := maps.ReadAgentSeen(a.pinned.AgentSeen, len(a.cfg.SessionAgents))
	if err != nil {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, s := range seen {
		if s == 0 || s == a.seen[i] {
			continue
		}
		a.seen[i] = s
		for k, t := range a.targets {
			if a.index[k] == i && t.RequestSeen(now) {
				a.changed(k, t)
			}
		}
	}
}

// changed logs a target's new status; mu is held.
func (a *sipAgents) changed(k agents.TargetKey, t *agents.Target) {
	st := t.Status()
	a.dirty = true
	a.log.Info("session agent target", "agent", k.Agent, "destination", k.Destination.String(), "realm", k.Realm,
		"in_service", st.InService, "reason", st.Reason)
}

// rows are the targets for show sipd agents.
func (a *sipAgents) rows() []agents.Row {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]agents.Row, 0, len(a.targets))
	for k, t := range a.targets {
		out = append(out, agents.Row{Agent: k.Agent, Destination: k.Destination, Realm: k.Realm, Status: t.Status()})
	}
	return out
}

// statuses are the targets' statuses, for the next configuration.
func (a *sipAgents) statuses() map[agents.TargetKey]agents.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[agents.TargetKey]agents.Status{}
	for k, t := range a.targets {
		out[k] = t.Status()
	}
	return out
}

// save writes the statuses, so that a restarted daemon does not flap
// every agent.
func (a *sipAgents) save() {
	a.mu.Lock()
	if !a.dirty {
		a.mu.Unlock()
		return
	}
	a.dirty = false
	var out []savedTarget
	for k, t := range a.targets {
		out = append(out, savedTarget{Agent: k.Agent, Destination: k.Destination, Realm: k.Realm, Status: t.Status()})
	}
	a.mu.Unlock()
	b, err := json.Marshal(out)
	if err == nil {
		path := api.PathsOf(a.stateDir).Agents
		err = writeOwn(path, b)
	}
	if err != nil {
		a.log.Warn("save session agent statuses", "err", err)
	}
}

func loadSavedTargets(path string) map[agents.TargetKey]agents.Status {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var saved []savedTarget
	if json.Unmarshal(b, &saved) != nil {
		return nil
	}
	out := map[agents.TargetKey]agents.Status{}
	for _, s := range saved {
		out[agents.TargetKey{Agent: s.Agent, Destination: s.Destination, Realm: s.Realm}] = s.Status
	}
	return out
}

// stop ends the monitor, whose context the caller has cancelled, and
// which the SIP event feed no longer hands events to: the pingers are
// closed to end what waits on them, and everything else only once no
// goroutine of it is left.
func (a *sipAgents) stop() {
	if a == nil {
		return
	}
	for _, p := range a.pingers {
		p.Close()
	}
	a.wg.Wait()
	if a.egress != nil {
		a.egress.close()
	}
	if a.pinned != nil {
		a.pinned.Close()
	}
}
