// Package sipd is the SIP side of the daemon: it watches session agents
// (known SIP peers) with OPTIONS pings sent from a realm's address, resolves
// their hostnames (SRV, then A/AAAA), and builds the fast "503 Service
// Unavailable" answer to requests the XDP filter refused.
//
// Messages, parsing and client transactions (RFC 3261 timers) are those of
// github.com/emiago/sipgo; DNS is github.com/miekg/dns.
package sipd
