package api

import "time"

// The states of a job of the daemon.
const (
	JobRunning  = "running"  // doing its work
	JobOff      = "off"      // the configuration in force needs none
	JobFailed   = "failed"   // not doing its work: Error says why
	JobDegraded = "degraded" // doing its work but not whole: Error says what is missing
)

// Job is one of the daemon's jobs as status shows it: the session keeper,
// the SIP event feed, the agents monitor, the 503 answerer, the rejects
// journal, the fleet keeper.
type Job struct {
	Name  string    `json:"name"`
	State string    `json:"state"`
	Error string    `json:"error"`
	Since time.Time `json:"since"`
}

// Broken reports whether the job does not do all its work.
func (j Job) Broken() bool { return j.State == JobFailed || j.State == JobDegraded }
