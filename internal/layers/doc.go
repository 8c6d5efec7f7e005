// Package layers holds no code: its test checks that the imports of the
// project's packages point one way, from the command down to the
// vocabulary, and that nothing shipped links a test package or the
// reference model (docs/design.md, "Layout").
package layers
