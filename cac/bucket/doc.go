// Package bucket is the token bucket of the fast path in Go: FlySIP
// semantics (start full, refill continuously at cps up to burst calls, a
// call takes one) kept as GCRA on one theoretical arrival time, with the
// same integer arithmetic as bpf/bucket.h so that the two agree exactly.
package bucket
