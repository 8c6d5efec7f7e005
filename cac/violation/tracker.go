package violation

import (
	"time"

	"github.com/xdpcac/xdpcac/cac"
)

// Window is how far back the Tracker keeps per-second deltas: the longer
// of the two windows its peaks and averages are taken over.
const Window = 5 * time.Minute

// Hold is how long a level refuses nothing before its violation ends:
// a flood paced under a second apart is one violation, not many.
const Hold = 3 * time.Second

// maxSamples bounds the ring: one sample a second over Window, and room
// for samples that come faster.
const maxSamples = 2 * int(Window/time.Second)

// Class is one class's cumulative counters, as the fast path counts them.
type Class struct {
	Admitted uint64
	Rejected [cac.NumReasons]uint64
}

// Counts are one attachment's cumulative counters of every class.
type Counts [cac.NumClasses]Class

// sample is what every attachment together counted between two readings.
type sample struct {
	at       time.Time     // the end of the interval
	span     time.Duration // its length
	offered  [cac.NumClasses]uint64
	rejected [cac.NumClasses][cac.NumReasons]uint64
}

// episode is one class and level's violation: the last, or the one now.
type episode struct {
	active     bool
	since      time.Time // the start of the interval of its first refusal
	lastReject time.Time // the end of the interval of its last
	rejected   uint64
	episodes   uint64 // since the Tracker started
}

// Tracker turns readings of the counters into violations. It is not safe
// for concurrent use; the daemon guards it.
type Tracker struct {
	last    map[string]Counts // by attachment
	lastAt  time.Time
	samples []sample // a ring of maxSamples
	next    int      // where the next sample goes
	state   [cac.NumClasses][cac.NumReasons]episode
}

// New returns a Tracker that has read nothing yet.
func New() *Tracker {
	return &Tracker{last: map[string]Counts{}, samples: make([]sample, 0, maxSamples)}
}

// Observe reads the counters of every attachment at time at. An
// attachment's first reading is its base; one whose counters went back
// (made anew) starts again from its new base; one gone is forgotten.
func (t *Tracker) Observe(at time.Time, per map[string]Counts) {
	first := t.lastAt.IsZero()
	if !first && !at.After(t.lastAt) {
		return // a clock that went back: nothing to rate
	}
	s := sample{at: at, span: at.Sub(t.lastAt)}
	for key, now := range per {
		before, ok := t.last[key]
		if !ok || below(now, before) {
			continue
		}
		for c := range now {
			for r := range now[c].Rejected {
				d := now[c].Rejected[r] - before[c].Rejected[r]
				s.rejected[c][r] += d
				s.offered[c] += d
			}
			s.offered[c] += now[c].Admitted - before[c].Admitted
		}
	}
	t.last = per
	t.lastAt = at
	if first {
		return
	}
	if len(t.samples) < maxSamples {
		t.samples = append(t.samples, s)
	} else {
		t.samples[t.next] = s
	}
	t.next = (t.next + 1) % maxSamples
	t.update(s)
}

// below reports whether any counter of now is lower than before's.
func below(now, before Counts) bool {
	for c := range now {
		if now[c].Admitted < before[c].Admitted {
			return true
		}
		for r := range now[c].Rejected {
			if now[c].Rejected[r] < before[c].Rejected[r] {
				return true
			}
		}
	}
	return false
}

// update starts, extends and ends the episodes with sample s.
func (t *Tracker) update(s sample) {
	for c := range s.rejected {
		for r, n := range s.rejected[c] {
			e := &t.state[c][r]
			switch {
			case n > 0 && !e.active:
				*e = episode{active: true, since: s.at.Add(-s.span), lastReject: s.at, rejected: n, episodes: e.episodes + 1}
			case n > 0:
				e.lastReject, e.rejected = s.at, e.rejected+n
			case e.active && s.at.Sub(e.lastReject) >= Hold:
				e.active = false
			}
		}
	}
}
