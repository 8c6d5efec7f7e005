package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/violation"
)

// TestWriteViolations: the text layout keeps within 80 columns with
// rates of six digits and the longest names, says until "now" for one in
// violation and the time it ended otherwise, the day alone when not
// today's; wide gives every rate and the day with the time; none is said
// in words.
func TestWriteViolations(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.Local)
	ended := now.Add(-40 * time.Second)
	big := violation.Rates{Now: 123456, Peak1m: 234567, Peak5m: 345678, Avg1m: 99999, Avg5m: 88888}
	vs := []violation.View{
		{Class: "sip-register", Level: "session-charges", InViolation: true, Since: now.Add(-25 * time.Hour),
			Arrival: big, Refused: big, Rejected: 123456789, Episodes: 3},
		{Class: "pppoe-padi", Level: "source", Since: now.Add(-time.Minute), Ended: &ended,
			Arrival: violation.Rates{Peak5m: 812.4, Avg1m: 2.25}, Refused: violation.Rates{Peak1m: 640}},
	}
	var text, wide, none bytes.Buffer
	if err := writeViolations(&text, vs, false, now); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if len(l) > 80 {
			t.Errorf("a line of %d columns:\n%s", len(l), text.String())
		}
	}
	lines := strings.Split(text.String(), "\n")
	if !strings.Contains(lines[1], "Dec 4 ") || !strings.Contains(lines[1], "now") || !strings.Contains(lines[1], "345678") {
		t.Errorf("the violation of yesterday still on:\n%s", text.String())
	}
	if !strings.Contains(lines[2], "11:59:00  11:59:20") || !strings.Contains(lines[2], "812") {
		t.Errorf("the violation that ended:\n%s", text.String())
	}
	if err := writeViolations(&wide, vs, true, now); err != nil {
		t.Fatal(err)
	}
	w := strings.Split(wide.String(), "\n")
	if !strings.Contains(w[0], "episodes") || !strings.Contains(w[1], "Dec 4 11:00:00") || !strings.Contains(w[1], "123456789") || !strings.Contains(w[2], "2.2") || !strings.Contains(w[2], "640") {
		t.Errorf("wide:\n%s", wide.String())
	}
	writeViolations(&none, nil, false, now)
	if none.String() != "no class or level refused in the last 5m0s\n" {
		t.Errorf("none: %q", none.String())
	}
}
