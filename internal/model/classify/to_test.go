package classify

import (
	"strings"
	"testing"
)

// TestToSteps: a To value is read in at most SIPToSteps steps, a step
// each byte that can change what it means and one for its end; a tag
// past them is no tag, so the request is charged as a new dialog's.
func TestToSteps(t *testing.T) {
	// '<', the parameters' semicolons, '>', the tag's semicolon and the
	// newline: params+4 steps.
	to := func(params int) []byte {
		m := request("To: <sip:bob@example.com"+strings.Repeat(";p", params)+">;tag=1", "CSeq: 1 INVITE")
		return m[strings.Index(string(m), "To: ")+4:]
	}
	for params, want := range map[int]bool{0: true, SIPToSteps - 4: true, SIPToSteps - 3: false, SIPToMax / 2: false} {
		if got := toTagged(to(params), 0); got != want {
			t.Errorf("%d parameters (%d steps): tagged %v, want %v", params, params+4, got, want)
		}
	}
	// Without a newline, finding the end is a step of its own.
	end := []byte("<sip:bob@example.com" + strings.Repeat(";p", SIPToSteps-3) + ">;tag=1")
	if toTagged(end, 0) {
		t.Errorf("%d steps and the end: tagged", SIPToSteps)
	}
	if !toTagged(end[len(";p"):], 0) {
		t.Errorf("%d steps and the end: not tagged", SIPToSteps-1)
	}
}
