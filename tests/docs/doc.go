// Package docs holds the tests that hold the project's pages, which stay
// in docs/, to the code. It has no code of its own, and sits under tests/
// because nothing ships it.
//
// refs_test.go checks that every place the sources cite a section of
// docs/design.md by name finds that section there; config_test.go that
// every configuration key is documented; cli_test.go that every command,
// flag and exit code the pages name exists and every one that exists is
// named. A heading renamed or a key added without its documentation fails
// `go test` rather than leaving a reader to look for what is not written
// down.
package docs
