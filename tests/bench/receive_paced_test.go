package bench

import (
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// Flat out, the generator sends faster than any but the floor's receiver
// takes, and the box veth's full ring refuses the rest. A refused frame
// goes back to the generator's page pool from CPU 0 while the receiver
// gives back every frame it dropped to the same pool from CPU 1, and the
// two take turns at the lock of the pool's ring: on the NAPI thread that
// lock is most of a slow row's time, and the slower the receiver, the more
// frames are refused and the longer it waits (BENCHMARKS.md, "Receiving
// CPU paced, and reject records in slots"). A NIC's driver gives a dropped
// frame back to a pool of its own CPU, with no lock. Offered too little,
// on the other hand, the NAPI thread sleeps between short polls and each
// frame carries a share of the wake-ups. So each row is also measured
// paced: the generator counts to spin before each frame, the spin whose
// probe flood cost the receiver the least CPU per frame.
const (
	paceProbe   = 300_000 // frames a probe flood
	paceMaxSpin = 1 << 14 // the most a generator counts to before a frame
	// Past the least cost, a probe that the ring refused almost nothing
	// of and that cost this much more, or any that cost paceGone more, is
	// on the starved side: the rest would cost more still.
	paceStarved, paceGone = 1.15, 2.0
)

// bestPace probes the row at spins 0, 16, 24, 36, … (half as much again
// each time), then around the cheapest of them in steps of a quarter, an
// eighth and a sixteenth of it, and returns the spin at which the
// receiver spent the least CPU per frame received. The cost falls steeply
// on both sides of the pace the receiver just keeps up with, so the
// finer steps matter.
func bestPace(b *testing.B, tb *harness.Testbed, row rcvRow) int {
	b.Helper()
	best, bestNS := 0, 0.0
	try := func(spin int) *rcvSample {
		s := measureRow(b, tb, row, row.pace(spin), paceProbe)
		if spin == 0 || s.ns < bestNS {
			best, bestNS = spin, s.ns
		}
		return &s
	}
	for spin := 0; spin <= paceMaxSpin; spin = max(16, spin*3/2) {
		if s := try(spin); (s.lost < 0.01 && s.ns > paceStarved*bestNS) || s.ns > paceGone*bestNS {
			break
		}
	}
	for div := 4; div <= 16 && best >= div; div *= 2 {
		mid := best
		try(mid - mid/div)
		try(mid + mid/div)
	}
	return best
}
