// Package harness is what the test packages under tests/ share: the fast
// path on the real XDP object run through BPF_PROG_TEST_RUN beside the
// reference model, the frames they send it, the testbed of two network
// namespaces joined by a veth pair with cacctl attached, and the daemon
// (cacctl run) started on it. They need root; see testenv.RequireBPF.
package harness
