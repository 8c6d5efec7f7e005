package cpu

import (
	"sync"
	"time"
)

// Window keeps readings over a span, the lifetime of `call admission load
// <multiplier> <lifetime>`, so that the load charge follows the average
// load rather than every spike. It is safe for concurrent use.
type Window struct {
	span time.Duration

	mu sync.Mutex
	rs []Reading // oldest first
}

// NewWindow makes a window over span. A span of 0 or less keeps only the
// last interval, so Average equals Last.
func NewWindow(span time.Duration) *Window {
	return &Window{span: span}
}

// Add puts in a reading. One older than the newest is dropped, since a
// late sample must not pass for the newest; readings of one Sampler must
// not be mixed with another's, whose base differs.
func (w *Window) Add(r Reading) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.rs); n > 0 && r.At.Before(w.rs[n-1].At) {
		return
	}
	w.rs = append(w.rs, r)
	// Keep the newest reading at or before newest−span, so the average
	// covers the whole span and not a bit less, and never fewer than two
	// readings, so there is an interval to measure.
	cut := r.At.Add(-w.span)
	keep := 0
	for i, x := range w.rs[:len(w.rs)-1] {
		if x.At.After(cut) {
			break
		}
		keep = i
	}
	keep = min(keep, len(w.rs)-2)
	if keep > 0 {
		w.rs = append(w.rs[:0], w.rs[keep:]...)
	}
}

// Average is Pcpu from the oldest reading kept to the newest; 0 until
// there are two.
func (w *Window) Average() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.rs) < 2 {
		return 0
	}
	return Percent(w.rs[0], w.rs[len(w.rs)-1])
}

// Last is Pcpu of the last interval alone, the "current actual CPU" of the
// new-model gate; 0 until there are two readings.
func (w *Window) Last() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.rs)
	if n < 2 {
		return 0
	}
	return Percent(w.rs[n-2], w.rs[n-1])
}

// Covered is the time the average spans now, shorter than the window's
// span while it fills after start.
func (w *Window) Covered() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.rs) < 2 {
		return 0
	}
	return w.rs[len(w.rs)-1].At.Sub(w.rs[0].At)
}
