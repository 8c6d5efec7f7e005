// Package daemon holds the tests of cacctl's daemon (cacctl run), its demo,
// and the attach tests the kernel-floor VM does not run: their deadlines
// of a few seconds are the host's, and some need tools the VM lacks
// (ethtool). TestClockJumps, which sets the machine's clock, is the
// other way round: it runs in the kernel VM only, never on the host
// (docs/design.md, "Testing").
package daemon
