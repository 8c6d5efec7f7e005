package collector

import "github.com/xdpcac/xdpcac/maps"

// Reader reads what one scrape exports; the daemon passes one that reads
// the pinned BPF maps with ReadPinned. Read may return a partial Snapshot together with an
// error: the collector exports what the Snapshot holds and counts the error.
type Reader interface {
	Read() (Snapshot, error)
}

// ReaderFunc adapts a function to a Reader.
type ReaderFunc func() (Snapshot, error)

// Read calls f.
func (f ReaderFunc) Read() (Snapshot, error) { return f() }

// Snapshot is the fast path's state at one scrape.
type Snapshot struct {
	// Interfaces: counters of each attached interface, keyed by its name as
	// `cacctl show stats` keys it (IFACE or NETNS:IFACE).
	Interfaces map[string]maps.Stats
	// MalformedDrop is set when the fast path is configured to drop
	// malformed frames; their series is then labelled verdict "drop".
	MalformedDrop bool
	// DenyTable: the deny table, one for the box whatever the
	// interfaces; nil without one (an attachment of a version before it).
	DenyTable *DenyTable
	// Buckets: tokens left in the class and environment buckets.
	Buckets []Bucket
	// CallAdmission: nil when nothing is attached.
	CallAdmission *maps.CallAdmissionView
	// Accounts and Customers: the buckets of the configuration's accounts
	// and customers that have a rate, by name; none without Names. Their
	// number is the configuration's own, which the fast path's tables cap
	// (policy.MaxAccounts, policy.MaxCustomers).
	Accounts  []AccountBucket
	Customers []CustomerBucket
	// Agents: session agents and their state per destination and realm;
	// empty when none are configured.
	Agents []Agent
	// SIPAnswers: refused SIP requests the daemon answered with 503, and
	// those it suppressed (over sip-reject.rate, not answerable, unsent).
	SIPAnswered, SIPSuppressed uint64
	// Egress: each session agent as egress admission counts it; the
	// answers sent on agents' behalf and those that could not be; and
	// the agents' out-service answers that answered no request the SIP
	// server sent (docs/design.md, "Egress admission").
	Egress                           []AgentEgress
	EgressAnswered, EgressUnanswered uint64
	ForgedResponses                  uint64
	// DenyEvicted: the sources the deny table evicted, as the daemon's
	// sweeps count them (docs/design.md, "Auto-deny"); nil when the pins
	// alone were read, or before the daemon's first sweep.
	DenyEvicted *uint64
	// Daemon: what cacctl run knows of itself; nil when the pins alone
	// were read.
	Daemon *DaemonState
}

// AgentEgress is what the egress program did with the INVITEs the SIP
// server sent toward one session agent.
type AgentEgress struct {
	Name                             string
	Invites, Retransmits, Unanswered uint64
	ACKs                             uint64            // the server's ACKs of refusals, dropped
	Refused                          map[string]uint64 // by reason: connection, agent-down, capacity
	// Sessions: the agent's max-sessions (Max 0: none) and the dialogs
	// toward it that hold one.
	Sessions maps.SessionsInForce
}

// Bucket levels.
const (
	LevelClass       = "class"
	LevelEnvironment = "environment"
)

// Bucket is the state of one token bucket.
type Bucket struct {
	Level  string // LevelClass or LevelEnvironment
	Class  string // class name, "" for the environment bucket
	Tokens float64
	Burst  float64
}

// Agent is a session agent's state towards one destination in one realm.
type Agent struct {
	Name, Destination, Realm string
	Up                       bool
}

// DenyTable is the deny table at one scrape (docs/design.md, "Auto-deny").
type DenyTable struct {
	// Sources: those whose deny-for has not ended; Size: the most it
	// holds (access.auto-deny.table).
	Sources, Size uint64
}
