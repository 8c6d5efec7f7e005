// Package libxdp holds the tests of xdpcac sharing an interface with
// libxdp's programs through its multi-program dispatcher (docs/design.md,
// "Sharing an interface"): xdp-filter and xdpcac on one veth, each
// filtering its own frames, listed by xdp-loader, and either taken off
// alone. They need root and xdp-tools, and a kernel that runs extension
// (freplace) programs.
package libxdp
