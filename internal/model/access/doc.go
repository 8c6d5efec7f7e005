// Package access is the pure-Go twin of the fast path's access control
// (bpf/access.h): the static deny and allow lists, read by longest prefix
// or by MAC, and the deny table the fast path fills from a source's own
// refusals, counted in eight slots of an eighth of the window each
// (docs/design.md, "Access control" and "Auto-deny"). The differential
// tests hold the XDP object to it; only tests link it.
package access
