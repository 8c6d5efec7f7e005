// Package peers holds the tests against real peers in the network
// namespaces: Kamailio, sipp, sipvicious, pppoe-server and xl2tpd.
package peers
