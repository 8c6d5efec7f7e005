// Package admission is the pure-Go twin of the fast path as a whole, the
// model the differential tests of tests/fastpath hold the XDP object to:
// classify a frame (internal/model/classify), then run a first packet
// through the admission pipeline of docs/design.md "Admission"
// (cac/bucket at each level) and say what XDP does with it.
//
// The limits it enforces are those of cac/policy, which production writes
// to the maps. It sits under internal/model because only tests link it:
// the binary never does (docs/design.md, "Layout").
package admission
