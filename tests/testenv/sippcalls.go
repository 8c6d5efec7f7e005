package testenv

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Vendor is a sipp UAS playing a carrier's vendor behind a proxy: a
// scenario that logs every INVITE it receives (and every ACK for a
// transaction it never saw) with its time, so that a test can count
// what reached the vendor in each second. vendor-uas answers every call
// 200 and vendor-uas-503 every INVITE 503; a scenario of one's own must
// log the same lines.
type Vendor struct {
	*Sipp
	Addr    netip.AddrPort
	logFile string
}

// SippEvent is a line a scenario logged: a message received or sent,
// with its time and Call-ID.
type SippEvent struct {
	CallID string
	At     time.Time
}

// vendorMarker and callerMarker start the lines the scenarios log:
// MARKER KIND|DATE<TAB>TIME<TAB>EPOCH|CALL-ID, as sipp's [timestamp]
// prints the time.
const (
	vendorMarker = "xdpcac-vendor|"
	callerMarker = "xdpcac-caller|"
)

// StartVendor runs scenario (tests/sipp/NAME.xml: "vendor-uas",
// "vendor-uas-503") as a UAS on UDP addr in namespace ns, which must have
// that address, and returns once it has bound it.
func StartVendor(t testing.TB, ns string, addr netip.AddrPort, scenario string) *Vendor {
	t.Helper()
	v := &Vendor{Addr: addr, logFile: filepath.Join(t.TempDir(), "vendor.log")}
	v.Sipp = StartSipp(t, ns, "-sf", ScenarioPath(t, scenario),
		"-i", addr.Addr().String(), "-p", strconv.Itoa(int(addr.Port())), "-t", "u1",
		"-trace_logs", "-log_file", v.logFile)
	return v
}

// Invites returns every INVITE the vendor received, in order; sipp
// answers a retransmission without logging it again.
func (v *Vendor) Invites() []SippEvent { return sippEvents(v.logFile, vendorMarker+"invite|") }

// StrayACKs returns every ACK the vendor received for a transaction it
// never saw: the ACK a proxy sends for a final reply that something
// else sent in the vendor's name.
func (v *Vendor) StrayACKs() []SippEvent { return sippEvents(v.logFile, vendorMarker+"ack|") }

// InvitesPerSecond counts the vendor's INVITEs in each second from start:
// element i is those received in [start+i s, start+i+1 s), up to the
// last one received; any before start are left out.
func (v *Vendor) InvitesPerSecond(start time.Time) []int {
	var at []time.Time
	for _, e := range v.Invites() {
		at = append(at, e.At)
	}
	return PerSecond(at, start)
}

// PerSecond counts times in each second from start, as InvitesPerSecond
// does.
func PerSecond(times []time.Time, start time.Time) []int {
	var bins []int
	for _, at := range times {
		if at.Before(start) {
			continue
		}
		i := int(at.Sub(start) / time.Second)
		for len(bins) <= i {
			bins = append(bins, 0)
		}
		bins[i]++
	}
	return bins
}

// sippEvents reads the lines of a -log_file that start with prefix.
func sippEvents(file, prefix string) []SippEvent {
	data, _ := os.ReadFile(file) // none yet: no events
	var out []SippEvent
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		stamp, callID, ok := strings.Cut(rest, "|")
		f := strings.Split(stamp, "\t")
		if !ok || len(f) != 3 {
			continue
		}
		at, err := ParseEpoch(f[2])
		if err != nil {
			continue
		}
		out = append(out, SippEvent{CallID: callID, At: at})
	}
	return out
}

// CallerOptions is the traffic a Caller offers.
type CallerOptions struct {
	Rate  float64       // new calls a second (-r)
	Calls int           // calls in all (-m)
	Hold  time.Duration // how long each answered call lasts before its BYE (-d)
	// RecvTimeout, if not zero, fails a call that waits longer for a
	// message (-recv_timeout); else only sipp's retransmission timers end it.
	RecvTimeout time.Duration
}

// Caller is sipp UAC running the caller-uac scenario into a proxy.
type Caller struct {
	*Sipp
	Options CallerOptions
	Start   time.Time // just before sipp started
	logFile string
}

// CallerCall is one call as the caller saw it.
type CallerCall struct {
	CallID   string
	Sent     time.Time // the first INVITE
	Answered time.Time // the 200; zero if none came
}

// Setup is the time from the INVITE to the 200, or -1 if it was not
// answered.
func (c CallerCall) Setup() time.Duration {
	if c.Answered.IsZero() {
		return -1
	}
	return c.Answered.Sub(c.Sent)
}

// CallerResult is what a Caller's run came to.
type CallerResult struct {
	Calls      []CallerCall // in the order they were placed
	Successful int          // as sipp counted them
	Failed     int
	Err        error // sipp's exit: nil when every call completed
	Elapsed    time.Duration
}

// StartCaller runs sipp UAC on local (an address of namespace ns) placing
// o.Calls calls at o.Rate a second to the proxy at target, each held
// o.Hold; it returns once sipp has bound its port.
func StartCaller(t testing.TB, ns string, local, target netip.AddrPort, o CallerOptions) *Caller {
	t.Helper()
	c := &Caller{Options: o, logFile: filepath.Join(t.TempDir(), "caller.log")}
	args := []string{"-sf", ScenarioPath(t, "caller-uac"),
		"-i", local.Addr().String(), "-p", strconv.Itoa(int(local.Port())), "-t", "u1",
		"-r", strconv.FormatFloat(o.Rate, 'f', -1, 64), "-m", strconv.Itoa(o.Calls),
		// No cap on calls at once below the total: sipp would otherwise
		// slow its rate once 3 × rate × hold calls are open, which is the
		// effect of slow setups a test wants to see, not hide.
		"-l", strconv.Itoa(o.Calls),
		"-d", strconv.FormatInt(o.Hold.Milliseconds(), 10),
		"-trace_logs", "-log_file", c.logFile}
	if o.RecvTimeout > 0 {
		args = append(args, "-recv_timeout", strconv.FormatInt(o.RecvTimeout.Milliseconds(), 10))
	}
	c.Start = time.Now()
	c.Sipp = StartSipp(t, ns, append(args, target.String())...)
	return c
}

// Wait waits, at most timeout, for sipp to place and end every call, and
// returns the calls and sipp's counts.
func (c *Caller) Wait(timeout time.Duration) CallerResult {
	r := CallerResult{Err: c.Sipp.Wait(timeout)}
	r.Elapsed = time.Since(c.Start)
	r.Calls = c.Calls()
	log := c.Log()
	r.Successful, r.Failed = sippTotal(log, "Successful call"), sippTotal(log, "Failed call")
	return r
}

// Calls returns the calls placed so far.
func (c *Caller) Calls() []CallerCall {
	answered := map[string]time.Time{}
	for _, e := range sippEvents(c.logFile, callerMarker+"answered|") {
		answered[e.CallID] = e.At
	}
	var calls []CallerCall
	for _, e := range sippEvents(c.logFile, callerMarker+"sent|") {
		calls = append(calls, CallerCall{CallID: e.CallID, Sent: e.At, Answered: answered[e.CallID]})
	}
	return calls
}

// sippTotal is the cumulative value of counter name on the last
// statistics screen in log ("  Successful call | 3 | 50"), -1 if none.
func sippTotal(log, name string) int {
	n := -1
	for _, line := range strings.Split(log, "\n") {
		f := strings.Split(line, "|")
		if len(f) == 3 && strings.TrimSpace(f[0]) == name {
			if v, err := strconv.Atoi(strings.TrimSpace(f[2])); err == nil {
				n = v
			}
		}
	}
	return n
}

// Quantile returns the q quantile (0 ≤ q ≤ 1, nearest rank) of ds, 0 if
// there are none.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(q*float64(len(s)))) - 1 // the rank, from 1
	return s[min(max(i, 0), len(s)-1)]
}

// String is a one-line summary of a run.
func (r CallerResult) String() string {
	return fmt.Sprintf("%d calls logged, %d successful, %d failed by sipp, in %v (exit: %v)",
		len(r.Calls), r.Successful, r.Failed, r.Elapsed.Round(time.Millisecond), r.Err)
}
