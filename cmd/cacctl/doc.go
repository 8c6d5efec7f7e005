// Command cacctl is xdpcac's one binary: it attaches and detaches the XDP
// filter, checks configuration files and shows what the fast path counted.
// It is thin over loader, maps and cac; see `cacctl --help`.
package main
