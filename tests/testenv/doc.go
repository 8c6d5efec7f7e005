// Package testenv is what tests that touch the kernel share, one of each:
// the privilege gate that XDPCAC_REQUIRE_BPF turns from a skip into a
// failure (CannotRun, and RequireBPF, RequireRoot and RequireTool on it),
// network namespaces and veth pairs that clean up after themselves and the
// runners in them (Do for Go code, Command and Run for programs), the poll
// loop that waits for a condition (Poll, WaitFor), the supervisor of the
// processes a test starts (Start: daemons and peers), and unique names so
// that runs can overlap; and the real SIP peers that run inside those
// namespaces, sipp and Kamailio.
package testenv
