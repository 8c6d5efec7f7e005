// Package cac names what call admission control at the NIC is about: the
// traffic classes whose first packets are admitted or rejected, the reasons
// a call is rejected, and what the classifier makes of a frame. The numbers
// are those of bpf/shared.h; a test holds the two together.
//
// Subpackages hold the control plane: config (the YAML file), bucket (the
// token bucket), policy (the limits as the fast path's maps hold them), and
// the oracles of the XDP program, which production does not link: classify
// (the reference classifier) and admission (the reference model of the
// whole fast path).
package cac
