package daemon

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/maps"
)

// Egress admission (docs/design.md, "Egress admission"): the egress
// program drops an INVITE the SIP server sends toward an agent over its
// connection limit, or out of service with fail-fast, and hands it up;
// the daemon answers it at once from the agent's address and port, so
// that the server's transaction layer takes the answer for the agent's
// and hunts to its next route. The daemon also tells the program which
// agents are out of service.

// egressAnswerer answers the INVITEs the egress program refused, and
// gathers them into reject records: one per agent, reason and second.
type egressAnswerer struct {
	raw    *sipd.RawUDP // in the interfaces' namespace
	counts *answerCounts
	record func(api.RejectLine) // the journal's; nil keeps no record

	mu      sync.Mutex
	pending map[egressKey]*api.RejectLine
}

type egressKey struct {
	agent  netip.Addr
	reason cac.EgressReason
	second int64
}

// egressWanted reports whether any agent has a connection limit or fails
// fast, which is when the egress program may refuse an INVITE.
func egressWanted(cfg *config.Config) bool {
	for _, a := range cfg.SessionAgents {
		if a.Connection.CPS != nil || a.OnOutOfService == config.OnOutOfServiceFailFast || a.MaxSessions > 0 {
			return true
		}
	}
	return false
}

func (d *Daemon) newEgressAnswerer() (*egressAnswerer, error) {
	raw, err := d.openRaw()
	if err != nil {
		return nil, fmt.Errorf("answer INVITEs refused at egress on session agents' behalf: %w", err)
	}
	w := &egressAnswerer{raw: raw, counts: &d.egressAnswers, pending: map[egressKey]*api.RejectLine{}}
	if d.journal != nil {
		w.record = d.journal.add
	}
	return w, nil
}

// answer sends the answer to one refused INVITE (sendAnswer): from the
// agent's address and port, to the server.
func (w *egressAnswerer) answer(ag config.SessionAgent, ev maps.SIPEvent, now time.Time) error {
	reason := cac.EgressReason(ev.Code)
	w.note(ev.Dst.Addr(), reason, now)
	return sendAnswer(w.raw, nil, w.counts, ev, sipd.HeadersOnly(ev.Message), ag.EgressResponseCode, 0,
		"session agent "+ag.Name+": "+reason.Text())
}

// note counts a refusal in the record of its agent, reason and second.
func (w *egressAnswerer) note(agent netip.Addr, reason cac.EgressReason, now time.Time) {
	k := egressKey{agent: agent.Unmap(), reason: reason, second: now.Unix()}
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.pending[k]
	if l == nil {
		l = &api.RejectLine{First: now, Interface: "egress", Class: cac.SIPInvite.String(), Source: k.agent.String(), Reason: reason.String()}
		w.pending[k] = l
	}
	l.Time = now
	l.Count++
}

// flush hands the records of finished seconds (all of them when all is
// set) to the journal.
func (w *egressAnswerer) flush(now time.Time, all bool) {
	w.mu.Lock()
	var done []api.RejectLine
	for k, l := range w.pending {
		if all || k.second < now.Unix() {
			done = append(done, *l)
			delete(w.pending, k)
		}
	}
	w.mu.Unlock()
	if w.record == nil {
		return
	}
	for _, l := range done {
		w.record(l)
	}
}

// pendingLines are the records of seconds not finished yet.
func (w *egressAnswerer) pendingLines() []api.RejectLine {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]api.RejectLine, 0, len(w.pending))
	for _, l := range w.pending {
		out = append(out, *l)
	}
	return out
}

func (w *egressAnswerer) close() {
	w.flush(time.Time{}, true)
	w.raw.Close()
}

// egressRefused answers an INVITE the egress program refused.
func (a *sipAgents) egressRefused(ev maps.SIPEvent) {
	if a.egress == nil || int(ev.Agent) >= len(a.cfg.SessionAgents) {
		a.egressCounts.suppressed.Add(1)
		return
	}
	if err := a.egress.answer(a.cfg.SessionAgents[ev.Agent], ev, time.Now()); err != nil {
		a.log.Warn("answer an INVITE refused at egress", "agent", a.cfg.SessionAgents[ev.Agent].Name, "err", err)
	}
}

// writeStates tells the egress program which agents are out of service in
// every realm they are pinged from (an agent is in service while any of
// its targets is), writing only what changed since the last write.
func (a *sipAgents) writeStates() {
	if a.pinned.AgentState == nil {
		return // an attachment of a version without egress admission
	}
	// statesMu first, held from the reading of the targets to the write:
	// the ticks and the event reader both write, and the later view must
	// be the one written last.
	a.statesMu.Lock()
	defer a.statesMu.Unlock()
	out := make([]bool, len(a.cfg.SessionAgents))
	seen := make([]bool, len(out))
	a.mu.Lock()
	for i := range out {
		out[i] = true
	}
	for k, t := range a.targets {
		i := a.index[k]
		seen[i] = true
		out[i] = out[i] && !t.Status().InService
	}
	a.mu.Unlock()
	for i := range out {
		out[i] = out[i] && seen[i] // an agent not resolved yet is not out
		if a.states != nil && i < len(a.states) && a.states[i] == out[i] {
			continue
		}
		if err := maps.WriteAgentState(a.pinned.AgentState, uint32(i), out[i]); err != nil {
			a.log.Warn("write session agent state", "agent", a.cfg.SessionAgents[i].Name, "err", err)
			return
		}
	}
	a.states = out
}

// egressRows are the agents as egress admission holds them, with the
// egress program's counters, for show sipd agents and the metrics.
func (a *sipAgents) egressRows() []agents.Egress {
	n := len(a.cfg.SessionAgents)
	counts := make([]maps.EgressCounts, n)
	var out []bool
	if a.pinned.EgressCounts != nil && a.pinned.AgentState != nil { // none before egress admission
		var err error
		if counts, err = maps.ReadEgressCounts(a.pinned.EgressCounts, n); err != nil {
			a.log.Warn("read egress counters", "err", err)
			counts = make([]maps.EgressCounts, n)
		}
		out, _ = maps.ReadAgentStates(a.pinned.AgentState, n)
	}
	rows := make([]agents.Egress, n)
	for i, ag := range a.cfg.SessionAgents {
		c := counts[i]
		rows[i] = agents.Egress{
			Agent: ag.Name, OnOutOfService: ag.OnOutOfService,
			Invites: c.Invites, Retransmits: c.Retransmits, Unanswered: c.Unanswered, ACKs: c.ACKs,
			Connection: c.Refused[cac.EgressConnection], AgentDown: c.Refused[cac.EgressAgentDown],
			Capacity: c.Refused[cac.EgressCapacity], MaxSessions: ag.MaxSessions,
		}
		if sm := maps.SessionMapsOf(&a.pinned.XdpMaps); ag.MaxSessions > 0 && sm.Whole() {
			rows[i].Sessions, _ = maps.SessionCount(sm, maps.AgentSessions(uint32(i)))
		}
		if ag.Connection.CPS != nil {
			rows[i].ConnectionCPS, rows[i].ConnectionBurst = *ag.Connection.CPS, ag.Connection.EffectiveBurst()
		}
		if i < len(out) {
			rows[i].OutOfService = out[i]
		}
	}
	return rows
}
