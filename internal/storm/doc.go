// Package storm sends traffic for the tests and the demo: frames built by
// internal/pkt, at a target rate for a duration, from an interface in a
// network namespace through an AF_PACKET socket, as peers on the wire
// would; each run reports what it sent. The storms are the ones a BRAS or
// SBC meets: PADIs from many modems, L2TP floods, SIP from many sources.
package storm
