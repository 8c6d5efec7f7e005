package fastpath

import (
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// FuzzXDP holds the real XDP object to the model on inputs the fuzzer finds:
// `go test ./tests/fastpath -fuzz FuzzXDP` (as root). Without -fuzz it runs the seeds.
func FuzzXDP(f *testing.F) {
	for _, c := range append(harness.SessionFrames(), harness.EdgeFrames()...) {
		f.Add(c.Frame)
	}
	fp := harness.NewFastPath(f, false)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 {
			return // the kernel refuses frames shorter than Ethernet
		}
		if err := fp.Check(frame); err != nil {
			t.Fatal(err)
		}
	})
}
