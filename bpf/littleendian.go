//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package bpf

// The objects are built for little-endian machines only (bpf2go -target
// bpfel, bpf/gen.go): the C asserts it (invite.h), and the Go side reads
// some of the programs' words as little-endian. On any other GOARCH the
// build stops here, naming why, rather than in maps/ with every binding
// undefined. docs/install.md says so.
var _ = xdpcacBuildsOnLittleEndianMachinesOnly
