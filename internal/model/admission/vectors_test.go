package admission

import (
	"slices"
	"testing"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
)

// TestXDPVectors: the model decides every frame the XDP object decided
// when the vectors were recorded (tests/fastpath's TestModelVectors) as
// the object did. It needs no root, so a change of the model's rules that
// the object does not share fails here, in `make check`, and not only in
// the differential tests under root.
func TestXDPVectors(t *testing.T) {
	v, err := ReadVectors(vectorsName)
	if err != nil {
		t.Fatal(err)
	}
	m := v.Model()
	kinds := map[cac.Kind]bool{}
	failures := 0
	for i, frame := range v.Frames {
		// The program takes a frame's surplus priority tags out first.
		d := m.Decide(classify.StripPriorityTags(slices.Clone(frame)), 0)
		kinds[d.Kind] = true
		if got := DecisionText(d); got != v.Decisions[i] {
			failures++
			t.Errorf("frame %d (%x): the model says\n%s\nXDP did\n%s", i, frame, got, v.Decisions[i])
			if failures > 20 {
				t.Fatal("too many differences")
			}
		}
	}
	// Vectors that miss a kind would hold the model to nothing there.
	for _, k := range []cac.Kind{cac.Unwatched, cac.Session, cac.Other, cac.InDialog, cac.Fragment, cac.Malformed} {
		if !kinds[k] {
			t.Errorf("no vector of kind %v", k)
		}
	}
	t.Logf("%d frames", len(v.Frames))
}
