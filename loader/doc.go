// Package loader puts the XDP program on an interface and takes it off
// again. Each attachment keeps its state in a directory of its own on bpffs
// (the link, the program and its maps, pinned), built under a temporary name
// and renamed into place, so that a crash leaves either a whole attachment
// or none. Every command that changes the state directory holds a lock on it.
package loader
