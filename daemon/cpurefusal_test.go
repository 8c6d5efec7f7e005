package daemon

import (
	"testing"
	"time"
)

// TestCPURefusals: the calls refused as cpu-limit between two writes are
// put down to the sample the first of them put in force, with its time in
// force; a sample that refused nothing, a reading that failed, and a
// count lower than before (an attachment made anew) put down nothing.
func TestCPURefusals(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var c cpuRefusals
	if r := c.wrote(at(0), 40_000, 7, true); r != nil {
		t.Errorf("the first sample: %+v, want nothing before it", r)
	}
	if r := c.wrote(at(1), 95_000, 7, true); r != nil {
		t.Errorf("the 40%% sample refused nothing: %+v", r)
	}
	r := c.wrote(at(2), 30_000, 19, true)
	if r == nil || r.CPUPercent != 95 || r.Refused != 12 || !r.From.Equal(at(1)) || !r.Until.Equal(at(2)) {
		t.Fatalf("the 95%% sample refused 12: %+v", r)
	}
	if r := c.wrote(at(3), 90_000, 0, false); r != nil {
		t.Errorf("a reading that failed: %+v", r)
	}
	if r := c.wrote(at(4), 90_000, 25, true); r != nil {
		t.Errorf("after a reading that failed, nothing to compare: %+v", r)
	}
	if r := c.wrote(at(5), 90_000, 3, true); r != nil {
		t.Errorf("a count lower than before: %+v", r)
	}
	if r := c.wrote(at(6), 10_000, 5, true); r == nil || r.CPUPercent != 90 || r.Refused != 2 {
		t.Errorf("from the lower count on: %+v", r)
	}
}
