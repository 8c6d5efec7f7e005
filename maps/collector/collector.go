package collector

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdpcac/xdpcac/cac"
	buildinfo "github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/maps"
)

// Verdict label values.
const (
	verdictPass = "pass"
	verdictDrop = "drop"
)

// Collector is a prometheus.Collector that reads the fast path's state on
// every scrape.
type Collector struct {
	reader            Reader
	version, revision string

	collectErrors atomic.Uint64
	mu            sync.Mutex
	lastErr       error

	packets, rejects, recordsLost         family
	rejectsUnrecorded                     family
	bucketTokens, bucketBurst             family
	accountTokens, accountBurst           family
	accountSessions, accountMaxSessions   family
	customerSessions, customerMaxSessions family
	agentSessions, agentMaxSessions       family
	customerTokens, customerBurst         family
	limit, charges, cpu, cpuAverage       family
	buffersFull, heartbeatAge, stale      family
	calls, agentUp, buildInfo, errors     family
	egressInvites, egressRefused, egressRetransmits, egressUnanswered, egressACKs,
	egressAnswers, forgedResponses family
	sipAnswered, sipSuppressed  family
	sipVerified, sipRetransmits family
	deniedFrames                family
	deniedSources               family
	deniedEvicted               family
	deniedTable                 family
	daemon                      daemonFamilies
}

// New returns a Collector that calls r on every scrape. version goes into
// xdpcac_build_info, with the commit the binary was built from.
func New(r Reader, version string) *Collector {
	return &Collector{
		reader:   r,
		version:  strings.ToValidUTF8(version, "\uFFFD"),
		revision: strings.ToValidUTF8(buildinfo.Read().Commit, "\uFFFD"),
		daemon:   newDaemonFamilies(),

		packets: newFamily("xdpcac_packets_total",
			"Frames the fast path counted, by interface, class and verdict.",
			prometheus.CounterValue, "iface", "class", "verdict"),
		rejects: newFamily("xdpcac_rejects_total",
			"First packets of a session rejected, by interface, class and the limit that rejected them.",
			prometheus.CounterValue, "iface", "class", "reason"),
		recordsLost: newFamily("xdpcac_ring_records_lost_total",
			"Records a full ring buffer refused while the daemon fell behind, by interface and ring (sip).",
			prometheus.CounterValue, "iface", "ring"),
		rejectsUnrecorded: newFamily("xdpcac_reject_records_lost_total",
			"Rejects the records table had no room for: counted in xdpcac_rejects_total, missing from the rejects log.",
			prometheus.CounterValue, "iface"),
		bucketTokens: newFamily("xdpcac_bucket_tokens",
			"Tokens left in a class or environment bucket.",
			prometheus.GaugeValue, "level", "class"),
		bucketBurst: newFamily("xdpcac_bucket_burst",
			"Burst (capacity in tokens) of a class or environment bucket.",
			prometheus.GaugeValue, "level", "class"),
		accountTokens: newFamily("xdpcac_account_bucket_tokens",
			"Tokens left in an account's bucket, of the accounts of the configuration with a rate.",
			prometheus.GaugeValue, "customer", "account"),
		accountBurst: newFamily("xdpcac_account_bucket_burst",
			"Burst (capacity in tokens) of an account's bucket.",
			prometheus.GaugeValue, "customer", "account"),
		customerTokens: newFamily("xdpcac_customer_bucket_tokens",
			"Tokens left in the bucket a customer's accounts share, of the customers of the configuration with a rate.",
			prometheus.GaugeValue, "customer"),
		customerBurst: newFamily("xdpcac_customer_bucket_burst",
			"Burst (capacity in tokens) of a customer's bucket.",
			prometheus.GaugeValue, "customer"),
		accountSessions: newFamily("xdpcac_account_sessions",
			"Dialogs holding a session of an account's max-sessions (docs/design.md, \"Capacity\").",
			prometheus.GaugeValue, "customer", "account"),
		accountMaxSessions: newFamily("xdpcac_account_max_sessions",
			"An account's max-sessions, of the accounts of the configuration with one.",
			prometheus.GaugeValue, "customer", "account"),
		customerSessions: newFamily("xdpcac_customer_sessions",
			"Dialogs holding a session of a customer's max-sessions.",
			prometheus.GaugeValue, "customer"),
		customerMaxSessions: newFamily("xdpcac_customer_max_sessions",
			"A customer's max-sessions, of the customers of the configuration with one.",
			prometheus.GaugeValue, "customer"),
		agentSessions: newFamily("xdpcac_session_agent_sessions",
			"Dialogs the SIP server has up toward a session agent that hold a session of its max-sessions.",
			prometheus.GaugeValue, "agent"),
		agentMaxSessions: newFamily("xdpcac_session_agent_max_sessions",
			"A session agent's max-sessions, of the agents of the configuration with one.",
			prometheus.GaugeValue, "agent"),
		limit: newFamily("xdpcac_call_admission_limit",
			"Call admission limit that the total charge is held to.",
			prometheus.GaugeValue),
		charges: newFamily("xdpcac_call_admission_charges",
			"Call admission charges in force: session, load and their total.",
			prometheus.GaugeValue, "kind"),
		cpu: newFamily("xdpcac_cpu_ratio",
			"CPU of the last interval as a ratio (0-1), as the call admission CPU gate sees it.",
			prometheus.GaugeValue),
		cpuAverage: newFamily("xdpcac_cpu_average_ratio",
			"Average CPU as a ratio (0-1) behind the call admission load charge.",
			prometheus.GaugeValue),
		buffersFull: newFamily("xdpcac_buffers_full",
			"1 while a watched receive buffer is full and call admission rejects as buffers.",
			prometheus.GaugeValue),
		heartbeatAge: newFamily("xdpcac_heartbeat_age_seconds",
			"Age of the control plane's last write to the fast path.",
			prometheus.GaugeValue),
		stale: newFamily("xdpcac_control_plane_stale",
			"1 while the control plane's heartbeat is older than stale-after.",
			prometheus.GaugeValue),
		calls: newFamily("xdpcac_calls_total",
			"Calls (PADI, ICRQ, INVITE) over all interfaces: accepted, every one admitted; rejected, those call admission refused, not the buckets (xdpcac_packets_total has every drop).",
			prometheus.CounterValue, "result"),
		agentUp: newFamily("xdpcac_session_agent_up",
			"1 while a session agent is up towards a destination in a realm.",
			prometheus.GaugeValue, "agent", "destination", "realm"),
		buildInfo: newFamily("xdpcac_build_info",
			"Always 1; labels give the version of xdpcac, the commit it was built from (empty when unknown) and the version of Go.",
			prometheus.GaugeValue, "version", "revision", "goversion"),
		sipAnswered: newFamily("xdpcac_sip_rejects_answered_total",
			"Refused SIP requests answered with 503, from the address and port they were sent to.",
			prometheus.CounterValue),
		sipSuppressed: newFamily("xdpcac_sip_rejects_suppressed_total",
			"Refused SIP requests of a class with action: reject left unanswered: over sip-reject.rate, not answerable (an ACK, unparseable) or unsent.",
			prometheus.CounterValue),
		sipVerified: newFamily("xdpcac_sip_indialog_verified_total",
			"In-dialog SIP requests of a dialog the filter knows, passed uncharged, by interface.",
			prometheus.CounterValue, "iface"),
		sipRetransmits: newFamily("xdpcac_sip_retransmits_total",
			"INVITE retransmissions within Timer B, which take nothing: passed (of an admitted transaction) or dropped (of a refused one), by interface.",
			prometheus.CounterValue, "iface", "verdict"),
		egressInvites: newFamily("xdpcac_egress_invites_total",
			"INVITE transactions the SIP server sent toward a session agent that went on, by agent.",
			prometheus.CounterValue, "agent"),
		egressRefused: newFamily("xdpcac_egress_refused_total",
			"INVITEs toward a session agent refused at egress and handed up to be answered on its behalf, by agent and reason (connection, agent-down).",
			prometheus.CounterValue, "agent", "reason"),
		egressRetransmits: newFamily("xdpcac_egress_retransmits_total",
			"Retransmissions of INVITEs sent toward a session agent, passed without a connection token, by agent.",
			prometheus.CounterValue, "agent"),
		egressUnanswered: newFamily("xdpcac_egress_unanswered_total",
			"INVITEs egress admission would have refused but could not hand up (over the per-CPU budget): they went on, by agent.",
			prometheus.CounterValue, "agent"),
		egressACKs: newFamily("xdpcac_egress_acks_dropped_total",
			"The SIP server's ACKs of the answers given on a session agent's behalf, dropped at egress: the agent never had those transactions, by agent.",
			prometheus.CounterValue, "agent"),
		egressAnswers: newFamily("xdpcac_egress_answers_total",
			"Answers to INVITEs refused at egress: sent on the agent's behalf, or not (unanswerable, unsent).",
			prometheus.CounterValue, "result"),
		forgedResponses: newFamily("xdpcac_session_agent_forged_responses_total",
			"Out-service answers from a session agent's address to an INVITE that answered no transaction the SIP server sent: ignored.",
			prometheus.CounterValue),
		deniedFrames: newFamily("xdpcac_denied_frames_total",
			"Frames of denied sources dropped before any parse, by interface and how the source is denied: static (a deny list) or auto (the deny table).",
			prometheus.CounterValue, "iface", "reason"),
		deniedSources: newFamily("xdpcac_denied_sources",
			"Sources in the deny table, one for the box, whose deny-for has not ended.",
			prometheus.GaugeValue),
		deniedEvicted: newFamily("xdpcac_denied_evicted_total",
			"Sources the deny table took out to make room, least recently used first, before the daemon released them, since the daemon started: counted by its sweeps.",
			prometheus.CounterValue),
		deniedTable: newFamily("xdpcac_denied_table_size",
			"Sources the deny table, one for the box, holds at most (access.auto-deny.table); past it the least recently used are evicted.",
			prometheus.GaugeValue),
		errors: newFamily("xdpcac_collect_errors_total",
			"Scrapes that could not read or export all of the fast path's state.",
			prometheus.CounterValue),
	}
}

func (c *Collector) families() []family {
	return append([]family{
		c.packets, c.rejects, c.recordsLost, c.rejectsUnrecorded, c.bucketTokens, c.bucketBurst,
		c.accountTokens, c.accountBurst, c.customerTokens, c.customerBurst,
		c.accountSessions, c.accountMaxSessions, c.customerSessions, c.customerMaxSessions, c.agentSessions, c.agentMaxSessions,
		c.limit, c.charges, c.cpu, c.cpuAverage, c.buffersFull, c.heartbeatAge, c.stale,
		c.calls, c.agentUp, c.buildInfo, c.errors, c.sipAnswered, c.sipSuppressed,
		c.sipVerified, c.sipRetransmits, c.deniedFrames, c.deniedSources, c.deniedTable, c.deniedEvicted,
		c.egressInvites, c.egressRefused, c.egressRetransmits, c.egressUnanswered, c.egressACKs, c.egressAnswers, c.forgedResponses,
	}, c.daemon.all()...)
}

// Describe sends the fixed descriptors of every metric the Collector may
// export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.families() {
		ch <- f.desc
	}
}

// Collect reads the fast path's state and sends it as const metrics. A read
// error or a value that cannot be exported increments
// xdpcac_collect_errors_total once for the scrape; what could be read is
// still exported, and no invalid metric is ever sent.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	e := &emitter{ch: ch}
	snap, err := c.read()
	if err != nil {
		e.fail(err)
	}
	c.collectInterfaces(e, snap)
	c.collectBuckets(e, snap.Buckets)
	if t := snap.DenyTable; t != nil {
		e.emit(c.deniedSources, float64(t.Sources))
		e.emit(c.deniedTable, float64(t.Size))
	}
	if n := snap.DenyEvicted; n != nil {
		e.emit(c.deniedEvicted, float64(*n))
	}
	c.collectAccounts(e, snap.Accounts, snap.Customers)
	if snap.CallAdmission != nil {
		c.collectCallAdmission(e, snap.CallAdmission)
	}
	c.collectAgents(e, snap.Agents)
	e.emit(c.sipAnswered, float64(snap.SIPAnswered))
	e.emit(c.sipSuppressed, float64(snap.SIPSuppressed))
	c.collectEgress(e, snap)
	e.emit(c.buildInfo, 1, c.version, c.revision, runtime.Version())
	c.daemon.collect(e, snap.Daemon)

	err = errors.Join(e.errs...)
	if err != nil {
		c.collectErrors.Add(1)
	}
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
	e.emit(c.errors, float64(c.collectErrors.Load()))
}

// Err returns what went wrong in the last scrape, nil if it exported
// everything; the daemon may log it.
func (c *Collector) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// read calls the Reader, turning a panic into an error: Collect runs in the
// registry's goroutines, where a panic would end the daemon.
func (c *Collector) read() (s Snapshot, err error) {
	if c.reader == nil {
		return Snapshot{}, errors.New("read fast path state: no reader")
	}
	defer func() {
		if p := recover(); p != nil {
			s, err = Snapshot{}, fmt.Errorf("read fast path state: reader panicked: %v", p)
		}
	}()
	s, err = c.reader.Read()
	if err != nil {
		return s, fmt.Errorf("read fast path state: %w", err)
	}
	return s, nil
}

func (c *Collector) collectInterfaces(e *emitter, s Snapshot) {
	names := make([]string, 0, len(s.Interfaces))
	for name := range s.Interfaces {
		names = append(names, name)
	}
	sort.Strings(names)
	malformed := verdictPass
	if s.MalformedDrop {
		malformed = verdictDrop
	}
	for _, iface := range names {
		if !utf8.ValidString(iface) {
			e.fail(fmt.Errorf("export interface %q: name is not valid UTF-8", iface))
			continue
		}
		st := s.Interfaces[iface]
		for _, cl := range cac.Classes() {
			cs := st.Classes[cl]
			passed, dropped := cs.Admitted, cs.RejectedTotal()
			if cl == cac.ClassMalformed && malformed == verdictDrop {
				// within its limits, as malformed: says
				passed, dropped = 0, cs.Seen()
			}
			e.emit(c.packets, float64(passed), iface, cl.String(), verdictPass)
			e.emit(c.packets, float64(dropped), iface, cl.String(), verdictDrop)
			for _, r := range cac.Reasons() {
				e.emit(c.rejects, float64(cs.Rejected[r]), iface, cl.String(), r.String())
			}
		}
		e.emit(c.packets, float64(st.Fragment), iface, "fragment", verdictPass)
		e.emit(c.packets, float64(st.PassedOther), iface, "passed-other", verdictPass)
		e.emit(c.rejectsUnrecorded, float64(st.RejectRecordsLost), iface)
		e.emit(c.recordsLost, float64(st.SIPEventsLost), iface, "sip")
		e.emit(c.sipVerified, float64(st.SIPInDialogVerified), iface)
		e.emit(c.sipRetransmits, float64(st.SIPRetransmits), iface, verdictPass)
		e.emit(c.sipRetransmits, float64(st.SIPRetransmitsRefused), iface, verdictDrop)
		e.emit(c.deniedFrames, float64(st.DeniedStatic), iface, "static")
		e.emit(c.deniedFrames, float64(st.DeniedAuto), iface, "auto")
	}
}

func (c *Collector) collectBuckets(e *emitter, buckets []Bucket) {
	seen := make(map[[2]string]bool, len(buckets))
	for _, b := range buckets {
		key := [2]string{b.Level, b.Class}
		if seen[key] {
			e.fail(fmt.Errorf("export bucket level=%q class=%q: duplicate", b.Level, b.Class))
			continue
		}
		seen[key] = true
		e.emit(c.bucketTokens, b.Tokens, b.Level, b.Class)
		e.emit(c.bucketBurst, b.Burst, b.Level, b.Class)
	}
}

func (c *Collector) collectCallAdmission(e *emitter, v *maps.CallAdmissionView) {
	e.emit(c.charges, v.SessionCharges, "session")
	e.emit(c.charges, v.LoadCharge, "load")
	e.emit(c.charges, v.TotalCharges, "total")
	e.emit(c.limit, v.Limit)
	// Prometheus wants ratios, not percentages (base units).
	e.emit(c.cpu, v.CPUPercent/100)
	e.emit(c.cpuAverage, v.LoadPercent/100)
	e.emit(c.buffersFull, boolValue(v.BuffersFull))
	if v.HeartbeatAgeMS != nil {
		e.emit(c.heartbeatAge, float64(*v.HeartbeatAgeMS)/1000)
	}
	e.emit(c.stale, boolValue(v.Stale))
	e.emit(c.calls, float64(v.Accepted), "accepted")
	e.emit(c.calls, float64(v.Rejected), "rejected")
}

func (c *Collector) collectEgress(e *emitter, snap Snapshot) {
	seen := make(map[string]bool, len(snap.Egress))
	for _, a := range snap.Egress {
		if seen[a.Name] {
			e.fail(fmt.Errorf("export egress of session agent %q: duplicate", a.Name))
			continue
		}
		seen[a.Name] = true
		e.emit(c.egressInvites, float64(a.Invites), a.Name)
		e.emit(c.egressRetransmits, float64(a.Retransmits), a.Name)
		e.emit(c.egressUnanswered, float64(a.Unanswered), a.Name)
		e.emit(c.egressACKs, float64(a.ACKs), a.Name)
		reasons := make([]string, 0, len(a.Refused))
		for r := range a.Refused {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			e.emit(c.egressRefused, float64(a.Refused[r]), a.Name, r)
		}
		if a.Sessions.Max > 0 {
			e.emit(c.agentSessions, float64(a.Sessions.Held), a.Name)
			e.emit(c.agentMaxSessions, float64(a.Sessions.Max), a.Name)
		}
	}
	if len(snap.Egress) > 0 {
		e.emit(c.egressAnswers, float64(snap.EgressAnswered), "answered")
		e.emit(c.egressAnswers, float64(snap.EgressUnanswered), "unanswered")
		e.emit(c.forgedResponses, float64(snap.ForgedResponses))
	}
}

func (c *Collector) collectAgents(e *emitter, agents []Agent) {
	seen := make(map[[3]string]bool, len(agents))
	for _, a := range agents {
		key := [3]string{a.Name, a.Destination, a.Realm}
		if seen[key] {
			e.fail(fmt.Errorf("export session agent %q destination %q realm %q: duplicate", a.Name, a.Destination, a.Realm))
			continue
		}
		seen[key] = true
		e.emit(c.agentUp, boolValue(a.Up), a.Name, a.Destination, a.Realm)
	}
}
