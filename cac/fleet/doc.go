// Package fleet holds one limit over many boxes: a fleet-scope limit (a
// customer with cps 100, burst 100, say) that must hold however many boxes
// the customer's calls are spread over.
//
// The XDP filter of each box admits calls with its own token buckets and
// cannot ask anyone per packet. So each box's daemon asks Redis for a lease
// of tokens and hands them to its filter: a GCRA (generic cell rate
// algorithm) whose theoretical arrival time (TAT) is kept in Redis grants a
// box up to the tokens it wants, only as many as conform. A granted token is
// a reservation, spent or not, so the fleet as a whole is granted at most
// rate × elapsed + burst, whatever the number of boxes, their clock skew,
// their restarts or the messages lost: the script (gcra.lua) runs atomically
// in Redis and reads Redis's clock, never a box's.
//
// GCRA is the script's twin in Go, the same integer arithmetic, so that the
// tests can hold the script to it. Client runs the script against a single
// Redis, a Sentinel-watched master or a Cluster; the keys of one fleet share
// one hash tag, so that they land in one Cluster slot and one script may
// touch them all.
package fleet
