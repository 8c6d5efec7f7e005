// Package bpf holds the XDP program of xdpcac, its C sources and the compiled
// object that bpf2go embeds. It imports nothing of the project: maps/ and
// loader/ give it meaning.
//
// The object is committed, so building needs no clang; `make generate`
// rebuilds it and CI checks that the committed copy is current.
package bpf
