// Package classify is the reference classifier: which frame is the first sign
// of life of a PPPoE, L2TP or SIP session. It is written for clarity, not
// speed, and is the oracle that differential tests hold the XDP program
// (bpf/classify.h, bpf/sip.h) to, bounds and all.
package classify
