// Package agents decides whether a SIP session agent is in service, the way
// an Oracle SBC does with OPTIONS pings. Status is kept per target, one
// (destination address, realm) pair, because a global agent reached through
// several realms can be reachable through some and not others; the agent as
// a whole counts as in service while any of its targets is.
//
// A Target is a plain state machine: the daemon feeds it events together
// with the time they happened and asks it when to ping next. Nothing here
// reads the clock or starts goroutines, so tests replay exact timelines.
package agents
