// Package tests holds xdpcac's tests that run the real XDP object: table and
// differential tests through BPF_PROG_TEST_RUN, and end-to-end tests that
// attach the filter with cacctl to a veth pair in network namespaces of
// their own. They need root; see testenv.RequireBPF.
package tests
