// Package fleet holds the tests of cac/fleet against a real redis-server:
// the lease script held to its Go twin, boxes racing for one limit, the
// script cache flushed under a client, and the fleet's members. Each test
// starts its own redis-server on a unix socket in its temporary directory,
// so that nothing listens on the machine; without redis-server they skip,
// or fail under XDPCAC_REQUIRE_BPF=1 as the other tests here do.
package fleet
