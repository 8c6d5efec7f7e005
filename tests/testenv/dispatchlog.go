package testenv

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// What the dispatcher configuration logs, read back: one type for each
// kind of line, and DispatchCall, a call's lines together.

// DispatchRelay is an INVITE Kamailio relayed to a vendor: the first try
// of a call or a hunt.
type DispatchRelay struct {
	CallID string
	URI    string         // $du, the destination as the list spells it
	Dest   netip.AddrPort // URI's address, zero if it has none
	At     time.Time
}

// DispatchReply is a final reply (200 or more) a vendor sent Kamailio
// for an INVITE.
type DispatchReply struct {
	CallID string
	Code   int
	From   netip.AddrPort // $si:$sp
	At     time.Time
}

// DispatchHunt is Kamailio's failure route taking a branch's 5xx or
// timeout (Code 408) for a reason to try the next vendor.
type DispatchHunt struct {
	CallID string
	Code   int // $T_reply_code
	At     time.Time
}

// DispatchFinal is Kamailio giving up on a call: its failure route found
// no vendor left to try, or the reply was not one to hunt on; Code is
// what the caller gets. A call answered 2xx has none.
type DispatchFinal struct {
	CallID string
	Code   int
	At     time.Time
}

// Relayed returns every INVITE Kamailio relayed, in the order it logged
// them.
func (d *Dispatcher) Relayed() []DispatchRelay {
	var out []DispatchRelay
	for _, f := range d.lines("relay", 2) {
		r := DispatchRelay{At: f.at, URI: f.fields[0], CallID: f.fields[1]}
		host := strings.TrimPrefix(strings.TrimPrefix(r.URI, "sip:"), "sips:")
		host, _, _ = strings.Cut(host, ";")
		r.Dest, _ = netip.ParseAddrPort(host)
		out = append(out, r)
	}
	return out
}

// Replies returns every final reply the vendors sent, in log order.
func (d *Dispatcher) Replies() []DispatchReply {
	var out []DispatchReply
	for _, f := range d.lines("reply", 3) {
		code, _ := strconv.Atoi(f.fields[0])
		from, _ := netip.ParseAddrPort(f.fields[1])
		out = append(out, DispatchReply{At: f.at, Code: code, From: from, CallID: f.fields[2]})
	}
	return out
}

// Hunts returns every hunt, in log order.
func (d *Dispatcher) Hunts() []DispatchHunt {
	var out []DispatchHunt
	for _, f := range d.lines("hunt", 2) {
		code, _ := strconv.Atoi(f.fields[0])
		out = append(out, DispatchHunt{At: f.at, Code: code, CallID: f.fields[1]})
	}
	return out
}

// Finals returns every call Kamailio gave up on, in log order.
func (d *Dispatcher) Finals() []DispatchFinal {
	var out []DispatchFinal
	for _, f := range d.lines("final", 2) {
		code, _ := strconv.Atoi(f.fields[0])
		out = append(out, DispatchFinal{At: f.at, Code: code, CallID: f.fields[1]})
	}
	return out
}

// logLine is one marked line: its time and the fields after it.
type logLine struct {
	at     time.Time
	fields []string
}

// lines returns the marked lines of kind with n fields after the time,
// the last (the Call-ID) holding whatever is left.
func (d *Dispatcher) lines(kind string, n int) []logLine {
	var out []logLine
	for _, line := range strings.Split(d.p.Log.String(), "\n") {
		_, rest, ok := strings.Cut(line, dispatchMarker+kind+"|")
		if !ok {
			continue
		}
		f := strings.SplitN(rest, "|", n+1)
		if len(f) != n+1 {
			continue
		}
		at, err := ParseEpoch(f[0])
		if err != nil {
			continue
		}
		out = append(out, logLine{at: at, fields: f[1:]})
	}
	return out
}

// ParseEpoch reads seconds since the epoch with an optional fraction,
// "1796163510.419932", as Kamailio's $TV(Sn) and sipp's [timestamp]
// print them.
func ParseEpoch(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("epoch %q: %w", s, err)
	}
	if len(frac) > 9 {
		frac = frac[:9]
	}
	var nanos int64
	if frac != "" {
		if nanos, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return time.Time{}, fmt.Errorf("epoch %q: %w", s, err)
		}
	}
	return time.Unix(secs, nanos), nil
}

// DispatchCall is what the proxy logged about one call, each kind of
// line in the order logged.
type DispatchCall struct {
	CallID  string
	Relays  []DispatchRelay
	Replies []DispatchReply
	Hunts   []DispatchHunt
	Final   *DispatchFinal // nil unless the proxy gave up on it
}

// Hunted reports whether the proxy tried another vendor for the call.
func (c *DispatchCall) Hunted() bool { return len(c.Hunts) > 0 }

// HuntDelay is how long the proxy took to relay the call to its second
// vendor from the first one's final reply reaching it, or, when the
// first sent none (the branch timed out), from its relay to the first;
// -1 if it did not hunt.
func (c *DispatchCall) HuntDelay() time.Duration {
	if len(c.Relays) < 2 {
		return -1
	}
	from := c.Relays[0].At
	for _, r := range c.Replies {
		if r.From == c.Relays[0].Dest {
			from = r.At
			break
		}
	}
	return c.Relays[1].At.Sub(from)
}

// Calls returns what the proxy logged, by Call-ID.
func (d *Dispatcher) Calls() map[string]*DispatchCall {
	calls := map[string]*DispatchCall{}
	get := func(id string) *DispatchCall {
		if calls[id] == nil {
			calls[id] = &DispatchCall{CallID: id}
		}
		return calls[id]
	}
	for _, x := range d.Relayed() {
		c := get(x.CallID)
		c.Relays = append(c.Relays, x)
	}
	for _, x := range d.Replies() {
		c := get(x.CallID)
		c.Replies = append(c.Replies, x)
	}
	for _, x := range d.Hunts() {
		c := get(x.CallID)
		c.Hunts = append(c.Hunts, x)
	}
	for _, x := range d.Finals() {
		get(x.CallID).Final = &x
	}
	return calls
}
