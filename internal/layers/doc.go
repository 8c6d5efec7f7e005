// Package layers holds no code: its test checks that the imports of the
// project's packages point one way, from the command down to the
// vocabulary; that nothing shipped links a test package or the reference
// model (internal/model); and that every package outside internal/ and
// tests/ is one the binary links, so that what lies there reads as shipped
// code because it is (docs/design.md, "Layout").
package layers
