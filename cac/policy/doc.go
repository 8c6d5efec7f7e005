// Package policy is the vocabulary of the limits the fast path enforces, as
// the control plane writes them to its maps: the buckets of each level,
// accounts and customers and the indexes they keep across a change, session
// agents, the call admission charge budget with its charge rings, and the
// control plane's measurements. The numbers are those of bpf/shared.h.
//
// It holds types and pure functions only, so that production code can speak
// of a policy without linking internal/model/admission, the reference model
// that the differential tests hold the XDP program to.
package policy
