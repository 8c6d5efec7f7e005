package bucket

import "time"

// Batch is calls at the given times (ns), of which Pass must pass.
type Batch struct {
	Times []uint64
	Pass  int
}

// SeedVector returns the FlySIP example for a 1 cps bucket of 60 calls,
// as traces the fast path and the model must both pass: 50 calls within
// 5 s all pass (15 calls left), 55 in the next 5 s of which 20 pass, then
// 10 over 50 s that all pass. It comes as two traces: the first burst at
// one instant, and spread over its 5 s.
func SeedVector() [][]Batch {
	spread := func(n int, from, span time.Duration, first bool) []uint64 {
		ts := make([]uint64, n)
		for i := range ts {
			k := i + 1 // later batches end on the end of their span
			if first {
				k = i // the first begins at 0, when the bucket is full
			}
			ts[i] = uint64(from + span*time.Duration(k)/time.Duration(n))
		}
		return ts
	}
	instant := make([]uint64, 50)
	return [][]Batch{
		{{instant, 50}, {spread(55, 5*time.Second, 5*time.Second, false), 20}, {spread(10, 10*time.Second, 50*time.Second, false), 10}},
		{{spread(50, 0, 5*time.Second, true), 50}, {spread(55, 5*time.Second, 5*time.Second, false), 20}, {spread(10, 10*time.Second, 50*time.Second, false), 10}},
	}
}
