package api

import (
	"time"

	"github.com/xdpcac/xdpcac/cac/agents"
	"golang.org/x/sys/unix"
)

// The endpoints, each answering the type named beside it, or Error.
const (
	PathStatus     = "/v1/status"     // GET: Status
	PathAgents     = "/v1/agents"     // GET: Agents
	PathRejects    = "/v1/rejects"    // GET: []RejectLine
	PathFleet      = "/v1/fleet"      // GET: Fleet
	PathApply      = "/v1/apply"      // POST ApplyRequest: Applied
	PathRead       = "/v1/read"       // POST ReadRequest: ReadAnswer
	PathViolations = "/v1/violations" // GET: []violation.View
)

// Status is what only the running daemon knows of itself.
type Status struct {
	PID    int    `json:"pid"`
	Config string `json:"config"`
	// ReloadConfig is the file SIGHUP reads: the one the daemon was
	// started with, or the last applied with adopt.
	ReloadConfig string    `json:"reload_config"`
	Since        time.Time `json:"since"`
	LoadedAt     time.Time `json:"loaded_at"`
	StateDir     string    `json:"state_dir"`
	Netns        string    `json:"netns"`
	Metrics      string    `json:"metrics"`
	LastError    string    `json:"last_error"`
	// LastReloadRefused: LastError is why the last reload was refused,
	// and the file before it stays in force; else LastError is what the
	// file in force could not start (a job's error), kept until a reload
	// succeeds whole.
	LastReloadRefused bool `json:"last_reload_refused"`
	// PinsLost are the attachments whose pins are gone and could not be
	// made again yet: the filter is on, but the CLI cannot see it.
	PinsLost []string `json:"pins_lost"`
	// Interfaces are those the file in force names, as attachments are
	// named (IFACE or NETNS:IFACE): status says which of them are
	// missing.
	Interfaces []string `json:"interfaces"`
	// LastCPURefusal is the last CPU sample the cpu-limit gate refused
	// calls with; null before any.
	LastCPURefusal *CPURefusal `json:"last_cpu_refusal"`
	// Jobs are the daemon's jobs, each with its own state: one failed
	// degrades the filter and stops no other (docs/design.md, "The
	// daemon's rooms").
	Jobs []Job `json:"jobs"`
}

// CPURefusal is a CPU sample that the cpu-limit gate refused calls with:
// the percent measured, when it was put in force and replaced, and the
// calls refused as cpu-limit meanwhile. show call admission statistics
// gives it in the same keys.
type CPURefusal struct {
	CPUPercent float64   `json:"cpu_percent"`
	From       time.Time `json:"from"`
	Until      time.Time `json:"until"`
	Refused    uint64    `json:"refused"`
}

// ApplyRequest asks the daemon to put a file in force.
type ApplyRequest struct {
	Config string `json:"config"`
	// Adopt makes Config the file SIGHUP reads from now on; without it
	// SIGHUP goes on reading the file the daemon was started with.
	Adopt bool `json:"adopt"`
}

// Applied answers an apply the daemon put in force.
type Applied struct {
	Applied string `json:"applied"`
}

// ReadRequest asks the daemon to run a command that only reads (show,
// status, top --once) for a peer that may not read the pins itself: a
// member of api.read-group. Args are the command line after `cacctl`,
// without --state-dir and --netns, which are the daemon's.
type ReadRequest struct {
	Args []string `json:"args"`
}

// ReadAnswer is what the command printed, its error and its exit code.
type ReadAnswer struct {
	Output   string `json:"output"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// Error is every answer that is not 200 OK.
type Error struct {
	Error string `json:"error"`
}

// Agents is the session agents' state, also `show sipd agents -o json`.
type Agents struct {
	Targets []agents.Row `json:"targets"`
	// Answered and Unanswered count refused SIP requests answered with
	// 503, and those over the rate or not answerable (dropped).
	Answered   uint64 `json:"answered_503"`
	Unanswered uint64 `json:"unanswered"`
	// Responses counts the agents' out-service responses the fast path
	// handed up, whether or not they counted; Forged those to an INVITE
	// that answered no transaction the SIP server sent, which did not.
	Responses uint64 `json:"agent_responses"`
	Forged    uint64 `json:"forged_responses"`
	// Egress is each agent as egress admission holds it, and
	// EgressAnswered and EgressUnanswered count the INVITEs refused at
	// egress answered on an agent's behalf, and those that could not be.
	Egress           []agents.Egress `json:"egress"`
	EgressAnswered   uint64          `json:"egress_answered"`
	EgressUnanswered uint64          `json:"egress_unanswered"`
}

// RejectLine is one reject record as the rejects log and `show rejects
// -o json` write it, one per line.
type RejectLine struct {
	Time      time.Time `json:"time"`
	First     time.Time `json:"first"`
	Interface string    `json:"interface"`
	Class     string    `json:"class"`
	Source    string    `json:"source"`
	Reason    string    `json:"reason"`
	// Rule is the cli or called rule whose account held the requests
	// ("cli +4420"); empty for none or a source prefix's.
	Rule  string `json:"rule"`
	Count uint64 `json:"count"`
	// A record of the deny table (docs/design.md, "Auto-deny") has an
	// event: EventDenied when a source is denied (reason "denied", its
	// since and until, the refusals that earned it; count 0), or
	// EventReleased when it is let go (Why says why; count and frames
	// the frames dropped while it was denied). Reject records have none
	// of these keys.
	Event    string    `json:"event,omitempty"`
	Why      string    `json:"why,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Until    time.Time `json:"until,omitzero"`
	Refusals uint32    `json:"refusals,omitzero"`
	Frames   uint64    `json:"frames,omitzero"`
}

// MonotonicNow reads the clock the fast path stamps records with, to
// turn their times into wall-clock times.
func MonotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}
