package agents

import (
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/xdpcac/xdpcac/cac/config"
)

// TargetKey names one target: the agent, the address pinged, and the realm
// the pings leave from.
type TargetKey struct {
	Agent       string
	Destination netip.AddrPort
	Realm       string
}

// AgentInService reports whether an agent is usable: it is while any one of
// its targets is, since calls can be routed through that realm.
func AgentInService(ts []Status) bool {
	return slices.ContainsFunc(ts, func(s Status) bool { return s.InService })
}

// ContactHost is the host the Contact header of a realm's pings carries.
// Teams and similar hosted platforms route their answers by this name, so
// the order follows the Oracle rules:
//   - with teams-fqdn-in-uri on: fqdn-hostname if set, else teams-fqdn if
//     set, else multi-tenancy-fqdn if set;
//   - with it off: multi-tenancy-fqdn if set; fqdn-hostname and teams-fqdn
//     are only for the Teams case, so they are not used;
//   - otherwise the realm's address, an IPv6 one in brackets as a SIP URI
//     writes it. An invalid address gives "".
func ContactHost(r config.Realm) string {
	if r.TeamsFQDNInURI {
		for _, h := range []string{r.FQDNHostname, r.TeamsFQDN} {
			if h != "" {
				return h
			}
		}
	}
	switch a := r.Address; {
	case r.MultiTenancyFQDN != "":
		return r.MultiTenancyFQDN
	case !a.IsValid():
		return ""
	case a.Is6():
		return "[" + a.WithZone("").String() + "]"
	default:
		return a.String()
	}
}

// Row is one target for display.
type Row struct {
	Agent       string         `json:"agent"`
	Destination netip.AddrPort `json:"destination"`
	Realm       string         `json:"realm"`
	Status      Status         `json:"status"`
}

// WriteAgents writes the status of agents and their targets for the
// operator: per agent in name order a "Session Agent NAME [In Service]" or
// "[Out of Service]" line, then its targets by destination and realm. A
// non-empty name keeps that agent only; an unknown one is an error that
// lists the agents there are, to spare the operator a second command.
func WriteAgents(w io.Writer, rows []Row, name string) error {
	byAgent := map[string][]Row{}
	for _, r := range rows {
		byAgent[r.Agent] = append(byAgent[r.Agent], r)
	}
	names := slices.Sorted(maps.Keys(byAgent))
	if name != "" {
		if _, ok := byAgent[name]; !ok {
			known := "none"
			if len(names) > 0 {
				known = strings.Join(names, ", ")
			}
			return fmt.Errorf("no session agent %q; known agents: %s", name, known)
		}
		names = []string{name}
	}
	var b strings.Builder
	for _, n := range names {
		ts := byAgent[n] // built above, so sorting it leaves rows alone
		slices.SortFunc(ts, func(x, y Row) int {
			if c := x.Destination.Compare(y.Destination); c != 0 {
				return c
			}
			return strings.Compare(x.Realm, y.Realm)
		})
		sts := make([]Status, len(ts))
		for i, r := range ts {
			sts[i] = r.Status
		}
		fmt.Fprintf(&b, "Session Agent %s [%s]\n", n, serviceText(AgentInService(sts)))
		for _, r := range ts {
			fmt.Fprintf(&b, "Destination: %s  Source : %s  %s\n",
				destText(r.Destination), r.Realm, serviceText(r.Status.InService))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func serviceText(in bool) string {
	if in {
		return "In Service"
	}
	return "Out of Service"
}

// destText leaves out the port when it is SIP's default, as most agents
// use it and the bare address is what operators look for.
func destText(d netip.AddrPort) string {
	if d.Port() == 5060 {
		return d.Addr().String()
	}
	return d.String()
}

// Egress is one agent as egress admission holds it (docs/design.md,
// "Egress admission"): its connection limit, what an INVITE toward it
// out of service gets, whether the egress program holds it out of
// service, and what the program did with the INVITEs sent toward it.
type Egress struct {
	Agent           string  `json:"agent"`
	ConnectionCPS   float64 `json:"connection_cps"` // 0: no connection limit
	ConnectionBurst float64 `json:"connection_burst"`
	OnOutOfService  string  `json:"on_out_of_service"`
	OutOfService    bool    `json:"out_of_service"`
	Invites         uint64  `json:"invites"`
	Retransmits     uint64  `json:"retransmits"`
	Connection      uint64  `json:"refused_connection"`
	AgentDown       uint64  `json:"refused_agent_down"`
	// Capacity: refused at the agent's MaxSessions (0: no limit), and
	// Sessions the dialogs toward it that hold one.
	Capacity    uint64 `json:"refused_capacity"`
	MaxSessions uint32 `json:"max_sessions"`
	Sessions    uint64 `json:"sessions"`
	Unanswered  uint64 `json:"unanswered"`
	ACKs        uint64 `json:"acks_dropped"`
}

// WriteEgress writes, for each agent (or the one named), what egress
// admission did: "Egress vendor-a: fail-fast", then, indented, its
// limits ("connection 5 cps (burst 5)"), what was sent, what refused and
// the ACKs dropped, each on its own line so that counts of eight digits stay within
// 80 columns; wide puts it all on the one line, for a script's grep.
func WriteEgress(w io.Writer, rows []Egress, name string, wide bool) error {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(x, y Egress) int { return strings.Compare(x.Agent, y.Agent) })
	sep := "\n  "
	if wide {
		sep = "; "
	}
	var b strings.Builder
	for _, e := range rows {
		if name != "" && e.Agent != name {
			continue
		}
		conn := "no connection limit"
		if e.ConnectionCPS > 0 {
			conn = fmt.Sprintf("connection %g cps (burst %g)", e.ConnectionCPS, e.ConnectionBurst)
		}
		if e.MaxSessions > 0 {
			conn += fmt.Sprintf(", sessions %d of %d", e.Sessions, e.MaxSessions)
		}
		held := ""
		if e.OutOfService {
			held = ", held out of service"
		}
		fmt.Fprintf(&b, "Egress %s: %s%s%s%s", e.Agent, e.OnOutOfService, held, sep, conn)
		fmt.Fprintf(&b, "%ssent %d, retransmitted %d, unanswered %d", sep, e.Invites, e.Retransmits, e.Unanswered)
		fmt.Fprintf(&b, "%srefused %d: connection %d, agent-down %d, capacity %d", sep,
			e.Connection+e.AgentDown+e.Capacity, e.Connection, e.AgentDown, e.Capacity)
		fmt.Fprintf(&b, "%sACKs of the refusals dropped %d\n", sep, e.ACKs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
