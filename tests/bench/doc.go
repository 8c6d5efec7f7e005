// Package bench holds the benchmarks, the soak (build tag soak), the
// storm scenarios and the tests whose timing an emulated CPU cannot keep
// (TestRejectSweepRace); they run on the host only.
package bench
