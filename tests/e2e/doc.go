// Package e2e holds the end-to-end tests that attach the filter with
// cacctl to veth pairs in network namespaces of their own and need only
// the kernel: attach and detach, limits under floods, and the egress
// program. The kernel-floor VM (tests/kernels) runs it whole.
package e2e
