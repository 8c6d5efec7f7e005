package violation

import (
	"slices"
	"time"

	"github.com/xdpcac/xdpcac/cac"
)

// Rates are a rate a second over the last reading and the last one and
// five minutes: the peak of the per-reading rates and the average.
type Rates struct {
	Now    float64 `json:"now"`
	Peak1m float64 `json:"peak_1m"`
	Peak5m float64 `json:"peak_5m"`
	Avg1m  float64 `json:"avg_1m"`
	Avg5m  float64 `json:"avg_5m"`
}

// View is one class and level that refused within the last five
// minutes, as `show violations -o json` gives it.
type View struct {
	Class string `json:"class"`
	// Level is the reason the level refuses with (docs/design.md,
	// "Admission"): source, class, environment, cpu-limit, ...
	Level       string     `json:"level"`
	InViolation bool       `json:"in_violation"`
	Since       time.Time  `json:"since"`
	Ended       *time.Time `json:"ended"` // null while in violation
	// Rejected is what this violation refused; Episodes how many
	// violations of this class and level the daemon has seen.
	Rejected uint64 `json:"rejected"`
	Episodes uint64 `json:"episodes"`
	// Arrival is the class's first packets offered a second, admitted or
	// not; Refused this level's refusals a second.
	Arrival Rates `json:"arrival"`
	Refused Rates `json:"refused"`
}

// View lists the classes and levels in violation now or that were within
// Window of now: those in violation first, the longest first; then those
// that ended, the latest first.
func (t *Tracker) View(now time.Time) []View {
	out := []View{}
	for c := range t.state {
		for r := range t.state[c] {
			e := t.state[c][r]
			if e.episodes == 0 || (!e.active && now.Sub(e.lastReject) > Window) {
				continue
			}
			v := View{Class: cac.Class(c).String(), Level: cac.Reason(r).String(), InViolation: e.active,
				Since: e.since, Rejected: e.rejected, Episodes: e.episodes}
			if !e.active {
				end := e.lastReject
				v.Ended = &end
			}
			v.Arrival = t.rates(now, func(s sample) uint64 { return s.offered[c] })
			v.Refused = t.rates(now, func(s sample) uint64 { return s.rejected[c][r] })
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b View) int {
		if a.InViolation != b.InViolation {
			if a.InViolation {
				return -1
			}
			return 1
		}
		if a.InViolation {
			return a.Since.Compare(b.Since)
		}
		return b.Ended.Compare(*a.Ended)
	})
	return out
}

// rates are count's rates over the samples of the windows ending at now.
func (t *Tracker) rates(now time.Time, count func(sample) uint64) Rates {
	var r Rates
	var newest time.Time
	var n1, n5 uint64
	var d1, d5 time.Duration
	for _, s := range t.samples {
		age := now.Sub(s.at)
		if age > Window || age < 0 || s.span <= 0 {
			continue
		}
		n := count(s)
		rate := float64(n) / s.span.Seconds()
		if s.at.After(newest) {
			newest, r.Now = s.at, rate
		}
		r.Peak5m, n5, d5 = max(r.Peak5m, rate), n5+n, d5+s.span
		if age <= time.Minute {
			r.Peak1m, n1, d1 = max(r.Peak1m, rate), n1+n, d1+s.span
		}
	}
	if d1 > 0 {
		r.Avg1m = float64(n1) / d1.Seconds()
	}
	if d5 > 0 {
		r.Avg5m = float64(n5) / d5.Seconds()
	}
	return r
}
