// Package bpf holds the XDP program of xdpcac and its egress program (the
// dialogs the SIP server opens), their C sources and the compiled objects
// that bpf2go embeds. It imports nothing of the project: maps/ and loader/
// give it meaning.
//
// The objects are committed, so building needs no clang; `make generate`
// rebuilds them and CI checks that the committed copies are current.
package bpf
