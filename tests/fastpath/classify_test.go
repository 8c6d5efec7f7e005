package fastpath

import (
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestClassifyTable runs every row of the classes (docs/design.md "Classes") through the real XDP
// object and the reference model; both must give the row's result. No
// limit is set, so every first packet is admitted.
func TestClassifyTable(t *testing.T) {
	for _, drop := range []bool{false, true} {
		f := harness.NewFastPath(t, drop)
		cases := append(harness.SessionFrames(), harness.EdgeFrames()...)
		for _, c := range cases {
			if model := classify.Classify(c.Frame, f.Model.Ports); model != c.Want {
				t.Errorf("%s: model says %v, want %v", c.Name, model, c.Want)
			}
			got, err := f.Run(c.Frame)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if got.Result != c.Want || got.Rejected {
				t.Errorf("%s: XDP did %v, want %v admitted", c.Name, got, c.Want)
			}
			want := cac.Pass
			if c.Want.Kind == cac.Malformed && drop {
				want = cac.Drop
			}
			if got.Verdict != want {
				t.Errorf("%s (malformed drop %v): verdict %v, want %v", c.Name, drop, got.Verdict, want)
			}
		}
	}
}

// TestClassifyTruncations cuts every valid frame at every length: the
// program must agree with the model on each cut, and never admit a cut
// frame as a session unless the model does.
func TestClassifyTruncations(t *testing.T) {
	f := harness.NewFastPath(t, true)
	n := 0
	for _, c := range append(harness.SessionFrames(), harness.EdgeFrames()...) {
		for cut := 14; cut < len(c.Frame); cut++ {
			if err := f.Check(c.Frame[:cut]); err != nil {
				t.Errorf("%s cut to %d bytes: %v", c.Name, cut, err)
			}
			n++
		}
	}
	t.Logf("%d truncated frames agree", n)
}

// TestClassifyLargeFrames: frames longer than what BPF_PROG_TEST_RUN shows
// the program agree with the model on the part it shows.
func TestClassifyLargeFrames(t *testing.T) {
	f := harness.NewFastPath(t, false)
	for _, n := range []int{3400, 3600, 5000, 9000} {
		frame := harness.V4udp(5060, SIP{Method: "INVITE", Headers: []string{"X-Pad: " + strings.Repeat("a", n), "To: <sip:b@x>;tag=1"}})
		if err := f.Check(frame); err != nil {
			t.Errorf("%d-byte frame: %v", len(frame), err)
		}
	}
}
