// Package l2tp is the pure-Go twin of the fast path's L2TP tunnel
// translation (bpf/l2tp.h, l2tp_lac.h, l2tp_lns.h), the model the
// differential tests hold the XDP and TC objects to: how a refused ICRQ is
// answered with a ZLB in the LNS's name, and how the sequence numbers of
// the tunnel are kept consistent for both ends afterwards (docs/design.md
// "Refusing an ICRQ"). It works on whole frames, changing them as the
// programs do, so that the tests can compare bytes. Only tests link it
// (docs/design.md, "Layout").
package l2tp
