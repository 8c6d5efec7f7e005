// Package testenv is what tests that touch the kernel share: the privilege
// gate that XDPCAC_REQUIRE_BPF turns from a skip into a failure, network
// namespaces and veth pairs that clean up after themselves, and unique
// names so that runs can overlap; and the real SIP peers that run inside
// those namespaces, sipp and Kamailio.
package testenv
