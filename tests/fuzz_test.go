package tests

import "testing"

// FuzzXDP holds the real XDP object to the model on inputs the fuzzer finds:
// `go test ./tests -fuzz FuzzXDP` (as root). Without -fuzz it runs the seeds.
func FuzzXDP(f *testing.F) {
	for _, c := range append(sessionFrames(), edgeFrames()...) {
		f.Add(c.frame)
	}
	fp := newFastPath(f, false)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 {
			return // the kernel refuses frames shorter than Ethernet
		}
		if err := fp.check(frame); err != nil {
			t.Fatal(err)
		}
	})
}
