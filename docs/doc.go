// Package docs holds the project's design and reference documents.
//
// It has no code of its own: refs_test.go checks that every place the
// sources cite a section of design.md by name finds that section there,
// so that a heading renamed or a comment mistyped fails `go test` rather
// than leaving a reader to look for a reason that is not written down.
package docs
