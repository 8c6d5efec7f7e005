package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/cac/violation"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// violationEvery is how often the daemon reads the counters for show
// violations: the rates it gives are per second.
const violationEvery = time.Second

// violationWatch reads the fast path's counters every second into a
// violation.Tracker, for show violations (docs/design.md, "Violations").
// It reads the counters as the fast path keeps them, which clear
// counters leaves alone, so a clear makes no violation.
type violationWatch struct {
	stateDir string
	mu       sync.Mutex
	t        *violation.Tracker
}

func newViolationWatch(stateDir string) *violationWatch {
	return &violationWatch{stateDir: stateDir, t: violation.New()}
}

// run reads until ctx ends. A reading that fails is skipped: the next
// one rates the time since the last that succeeded.
func (w *violationWatch) run(ctx context.Context) {
	tick := time.NewTicker(violationEvery)
	defer tick.Stop()
	for {
		w.read(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// read observes the counters of every attachment at time at.
func (w *violationWatch) read(at time.Time) {
	per := map[string]violation.Counts{}
	err := loader.EachPinned(w.stateDir, func(p *loader.Pinned) error {
		s, err := maps.ReadStats(p.Stats)
		if err != nil {
			return err
		}
		var c violation.Counts
		for i, cs := range s.Classes {
			c[i] = violation.Class{Admitted: cs.Admitted, Rejected: cs.Rejected}
		}
		per[p.Attachment.Key()] = c
		return nil
	})
	if err != nil {
		return
	}
	w.mu.Lock()
	w.t.Observe(at, per)
	w.mu.Unlock()
}

// view is what show violations prints.
func (w *violationWatch) view() []violation.View {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.t.View(time.Now())
}
