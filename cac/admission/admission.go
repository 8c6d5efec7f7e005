package admission

import (
	"fmt"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/fsol"
)

// Bucket levels, as enum cac_level indexes them: one per class, then the
// environment.
const (
	LevelEnvironment = cac.NumClasses
	NumLevels        = cac.NumClasses + 1
)

// Limits are the limits of every level.
type Limits [NumLevels]bucket.Limit

// LimitsOf converts the class and environment limits of a config.
func LimitsOf(cfg *config.Config) (Limits, error) {
	var l Limits
	conv := func(what string, lim config.Limit) (bucket.Limit, error) {
		if lim.Unlimited() {
			return bucket.Unlimited, nil
		}
		b, err := bucket.FromRate(*lim.CPS, lim.EffectiveBurst())
		if err != nil {
			return b, fmt.Errorf("%s: %w", what, err)
		}
		return b, nil
	}
	for c, cl := range cfg.Classes {
		b, err := conv("classes."+c.String(), cl.Limit)
		if err != nil {
			return l, err
		}
		l[c] = b
	}
	b, err := conv("environment", cfg.Environment)
	if err != nil {
		return l, err
	}
	l[LevelEnvironment] = b
	return l, nil
}

// Model is the fast path in Go.
type Model struct {
	Ports         *fsol.Ports
	MalformedDrop bool
	Limits        Limits
	buckets       [NumLevels]bucket.Bucket
}

// Decision is what the fast path does with one frame.
type Decision struct {
	fsol.Result
	Verdict  cac.Verdict
	Rejected bool
	Reason   cac.Reason // when Rejected
}

func (d Decision) String() string {
	if d.Rejected {
		return fmt.Sprintf("%v rejected (%v)", d.Result, d.Reason)
	}
	return fmt.Sprintf("%v %v", d.Result, d.Verdict)
}

// Admit runs a first packet of class c at now through the levels in order:
// the first that fails names the reason, and a rejected call takes nothing.
func (m *Model) Admit(c cac.Class, now uint64) (reason cac.Reason, rejected bool) {
	levels := []struct {
		level  int
		reason cac.Reason
	}{{int(c), cac.ReasonClass}, {LevelEnvironment, cac.ReasonEnvironment}}
	for _, l := range levels {
		if !m.buckets[l.level].Conforms(m.Limits[l.level], now) {
			return l.reason, true
		}
	}
	for _, l := range levels {
		m.buckets[l.level].Take(m.Limits[l.level], now)
	}
	return 0, false
}

// Decide classifies frame and, for a first packet, admits or rejects it.
func (m *Model) Decide(frame []byte, now uint64) Decision {
	d := Decision{Result: fsol.Classify(frame, m.Ports), Verdict: cac.Pass}
	switch d.Kind {
	case cac.Session:
		if d.Reason, d.Rejected = m.Admit(d.Class, now); d.Rejected {
			d.Verdict = cac.Drop
		}
	case cac.Malformed:
		if m.MalformedDrop {
			d.Verdict = cac.Drop
		}
	}
	return d
}
