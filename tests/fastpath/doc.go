// Package fastpath holds the tests that run the real XDP and egress
// programs through BPF_PROG_TEST_RUN and need only the kernel: the
// classifier, admission and charges, agents, reject records, the L2TP
// answer, the verifier's headroom, and the differential tests against the
// reference model. The kernel-floor VM (tests/kernels) runs it whole.
package fastpath
