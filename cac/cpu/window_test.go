package cpu

import (
	"math"
	"testing"
	"time"
)

func at(s float64, busy, total float64) Reading {
	return Reading{
		At:    time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second))),
		Busy:  time.Duration(busy * float64(time.Second)),
		Total: time.Duration(total * float64(time.Second)),
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestWindowAverageAndLast(t *testing.T) {
	w := NewWindow(10 * time.Second)
	if w.Average() != 0 || w.Last() != 0 {
		t.Fatal("an empty window reads other than 0")
	}
	rs := []Reading{
		at(0, 0, 0),
		at(3, 3, 3),     // 100 %
		at(7, 3, 7),     // 0 %
		at(9, 4, 9),     // 50 %
		at(12, 4.3, 12), // 10 %
		at(15, 5.5, 15), // 40 %
		at(20, 7.7, 20), // 44 %
	}
	w.Add(rs[0])
	if w.Average() != 0 || w.Last() != 0 {
		t.Fatal("a window of one reading reads other than 0")
	}
	for _, r := range rs[1:] {
		w.Add(r)
	}
	// Newest is t=20, so the span starts at t=10; t=9 is the last reading
	// at or before that and starts the average: 3.7 s busy of 11 s.
	if got, want := w.Average(), 100*3.7/11; !near(got, want) {
		t.Errorf("Average = %v, want %v (from t=9)", got, want)
	}
	if got := w.Last(); !near(got, 44) {
		t.Errorf("Last = %v, want 44", got)
	}
	if got := w.Covered(); got != 11*time.Second {
		t.Errorf("Covered = %v, want 11s", got)
	}

	// A late reading is not the newest.
	w.Add(at(1, 0, 1))
	if got := w.Last(); !near(got, 44) {
		t.Errorf("after a late reading Last = %v, want 44", got)
	}
}

func TestWindowKeepsReadingAtCut(t *testing.T) {
	w := NewWindow(10 * time.Second)
	w.Add(at(0, 0, 0))
	w.Add(at(10, 10, 10)) // 100 %
	w.Add(at(20, 12, 20)) // 20 %
	if got := w.Average(); !near(got, 20) {
		t.Errorf("Average = %v, want 20 (from t=10, exactly one span back)", got)
	}
}

func TestWindowZeroSpan(t *testing.T) {
	w := NewWindow(0)
	w.Add(at(0, 0, 0))
	w.Add(at(1, 1, 1))
	w.Add(at(2, 1.25, 2))
	if a, l := w.Average(), w.Last(); !near(a, 25) || !near(l, 25) {
		t.Errorf("span 0: Average %v, Last %v; want 25, 25", a, l)
	}
}

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		from, to Reading
		want     float64
	}{
		{at(0, 0, 0), at(1, 0.5, 1), 50},
		{at(0, 0, 0), at(1, 0, 0), 0},     // no time passed
		{at(0, 5, 5), at(1, 1, 6), 0},     // busy went back
		{at(0, 0, 0), at(1, 3, 1), 100},   // more busy than total
		{at(0, 0, 10), at(1, 1, 9), 0},    // total went back
		{at(0, 0, 0), at(1, 0.25, 1), 25}, // plain
		{at(0, 1, 1), at(1, 1.75, 2), 75}, // offsets do not matter
	} {
		if got := Percent(c.from, c.to); !near(got, c.want) {
			t.Errorf("Percent(%v, %v) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestLoadChargeSeed(t *testing.T) {
	for _, c := range []struct {
		pcpu float64
		mult uint32
		want float64
	}{
		{50, 100, 72.5},
		{0, 100, 47.5},
		{100, 100, 97.5},
		{50, 200, 145},
	} {
		if got := LoadCharge(c.pcpu, c.mult); !near(got, c.want) {
			t.Errorf("LoadCharge(%v, %d) = %v, want %v", c.pcpu, c.mult, got, c.want)
		}
	}
}
