// Package daemon holds the tests of cacctl's daemon (cacctl run), its demo,
// and the attach tests the kernel-floor VM does not run: their deadlines
// of a few seconds are the host's, and some need tools the VM lacks
// (ethtool) or set the machine's clock (TestClockJumps, which make test
// runs alone).
package daemon
