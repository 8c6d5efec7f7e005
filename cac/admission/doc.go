// Package admission is the reference model of the fast path as a whole:
// classify a frame (cac/classify), then run a first packet through the
// admission pipeline of docs/design.md "Admission" (cac/bucket at each level) and say
// what XDP does with it. Differential tests hold the XDP object to it.
//
// The limits it enforces are those of cac/policy, which production writes to
// the maps; only tests import this package.
package admission
