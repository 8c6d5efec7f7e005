package fastpath

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdpcac/xdpcac/internal/model/admission"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// vectorsGenerated is how many random and mutated frames the vectors hold
// besides the seed frames: enough to reach every kind, few enough that the
// file stays small.
const vectorsGenerated = 400

// TestModelVectors holds the XDP object to the vectors that
// internal/model/admission's TestXDPVectors holds the model to without
// root: the object still decides each recorded frame as recorded, so the
// vectors remain the object's. XDPCAC_RECORD_VECTORS=1 records them anew,
// requiring the model to agree on every frame, after a change of the
// program and the model together.
func TestModelVectors(t *testing.T) {
	f := harness.NewFastPath(t, false)
	path := filepath.Join("..", "..", admission.VectorsFile)
	if os.Getenv("XDPCAC_RECORD_VECTORS") == "1" {
		recordVectors(t, f, path)
		return
	}
	v, err := admission.ReadVectors(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.L2TPPorts, harness.TestL2TPPorts) || !slices.Equal(v.SIPPorts, harness.TestSIPPorts) ||
		v.DialogSets != f.Objs.Dialogs.MaxEntries() {
		t.Fatalf("%s ran under other ports or another dialog table: record it again (XDPCAC_RECORD_VECTORS=1)", path)
	}
	for i, frame := range v.Frames {
		d, err := f.Run(frame)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got := admission.DecisionText(d); got != v.Decisions[i] {
			t.Fatalf("frame %d (%x): XDP did\n%s\nthe vectors say\n%s\nrecord them again (XDPCAC_RECORD_VECTORS=1) if the program changed on purpose",
				i, frame, got, v.Decisions[i])
		}
	}
}

// recordVectors runs the seed frames and generated ones of a fixed seed
// through the object and the model, which must agree, and writes what
// they decided to path.
func recordVectors(t *testing.T, f *harness.FastPath, path string) {
	seeds := append(harness.SessionFrames(), harness.EdgeFrames()...)
	// By name, so that recording again changes the file only where the
	// decisions or the frames did.
	slices.SortStableFunc(seeds, func(a, b harness.FrameCase) int { return strings.Compare(a.Name, b.Name) })
	var frames [][]byte
	for _, c := range seeds {
		frames = append(frames, c.Frame)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < vectorsGenerated; i++ {
		if i%4 == 0 {
			frames = append(frames, randomFrame(rng))
		} else {
			frames = append(frames, mutate(rng, frames[rng.IntN(len(frames))]))
		}
	}
	v := &admission.Vectors{L2TPPorts: harness.TestL2TPPorts, SIPPorts: harness.TestSIPPorts,
		DialogSets: f.Objs.Dialogs.MaxEntries()}
	for i, frame := range frames {
		// The model sees the frame whole only if the program does.
		if len(frame) < 14 || len(frame) > harness.TestRunLinear {
			continue
		}
		d, err := f.Decide(frame)
		if err != nil {
			t.Fatalf("frame %d (%x): %v", i, frame, err)
		}
		v.Frames, v.Decisions = append(v.Frames, frame), append(v.Decisions, admission.DecisionText(d))
	}
	comment := "Frames and what the XDP object decided of each, in order, at time 0 and\n" +
		"without limits: the model is held to them without root. Recorded by\n" +
		"XDPCAC_RECORD_VECTORS=1 go test -run TestModelVectors ./tests/fastpath/"
	if err := admission.WriteVectors(path, comment, v); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d vectors written to %s", len(v.Frames), path)
}
