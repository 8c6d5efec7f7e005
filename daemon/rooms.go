package daemon

import (
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/api"
)

// room is the state one of the daemon's jobs shows in status
// (docs/design.md, "The daemon's rooms"): each job starts, stops and fails on its
// own, and says so here, so that one failing is seen and stops no other.
type room struct {
	name string

	mu    sync.Mutex
	state string // api.JobRunning, JobOff, JobFailed or JobDegraded
	err   string
	since time.Time
}

func newRoom(name string) *room { return &room{name: name, state: api.JobOff, since: time.Now()} }

func (r *room) set(state, err string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != state || r.err != err {
		r.since = time.Now()
	}
	r.state, r.err = state, err
}

// running: the job does its work.
func (r *room) running() { r.set(api.JobRunning, "") }

// off: the configuration in force needs no such job, or it stopped.
func (r *room) off() { r.set(api.JobOff, "") }

// fail: the job does not do its work, and err says why.
func (r *room) fail(err error) { r.set(api.JobFailed, err.Error()) }

// degrade: the job works, but not whole: err says what is missing.
func (r *room) degrade(err string) { r.set(api.JobDegraded, err) }

func (r *room) job() api.Job {
	if r == nil {
		return api.Job{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return api.Job{Name: r.name, State: r.state, Error: r.err, Since: r.since}
}

// jobs are the daemon's jobs as status shows them, in the order they
// start.
func (d *Daemon) jobs() []api.Job {
	out := []api.Job{d.journalJob(), d.sessions.room.job(), d.feedJob(), d.answerRoom.job(), d.agentsRoom.job(), d.fleet.job(), d.accessJob()}
	return out
}

func (d *Daemon) feedJob() api.Job {
	if d.feed == nil {
		return api.Job{Name: "sip-events", State: api.JobOff}
	}
	return d.feed.room.job()
}

// journalJob is the journal's state: it keeps the records for show
// rejects whatever happens to its file, and is degraded while the file
// cannot be written, rotated or opened (rejectsFile).
func (d *Daemon) journalJob() api.Job {
	j := api.Job{Name: "journal", State: api.JobOff}
	if d.journal == nil {
		return j
	}
	j.State = api.JobRunning
	if h := d.journal.file.health(); h.Fault != "" {
		j.State, j.Error, j.Since = api.JobDegraded, h.Fault, h.Since
	}
	return j
}

// accessJob is the state of the room that records the deny table.
func (d *Daemon) accessJob() api.Job {
	if d.access == nil {
		return api.Job{Name: "access", State: api.JobOff}
	}
	return d.access.room.job()
}
