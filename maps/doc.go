// Package maps gives typed access to the maps of the XDP program: counters
// summed over CPUs, run-time settings and the UDP port table. Layouts come
// from bpf2go (-type), so Go and C cannot drift apart silently.
package maps
