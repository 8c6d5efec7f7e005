// Package demo is `cacctl demo`: a BRAS and a peer in network namespaces of
// its own, the daemon on the BRAS side, storms from the peer side beside a
// trusted peer's real calls, and a result that says what the filter did.
package demo
