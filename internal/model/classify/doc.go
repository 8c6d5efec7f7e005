// Package classify is the pure-Go twin of the XDP classifier (bpf/classify.h,
// bpf/sip.h), the model the differential tests hold the XDP object to,
// bounds and all: which frame is the first sign of life of a PPPoE, L2TP or
// SIP session. It is written for clarity, not speed, and only tests link it
// (docs/design.md, "Layout").
package classify
