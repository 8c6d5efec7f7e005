// Package hostguard holds the test suite to what it may touch on the
// machine that runs it (docs/design.md, "Testing"): its test reads the
// sources of every test and fails on one that sets the wall clock, writes
// a sysctl, or adds an address or a route outside a namespace of its own.
// It needs neither root nor a kernel, so make check runs it.
package hostguard
