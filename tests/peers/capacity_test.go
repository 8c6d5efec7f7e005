package peers

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// Capacity: an account's max-sessions bounds its dialogs up at once. The
// filter charges a dialog to the account when it admits the INVITE; a BYE
// in either direction, a final answer of 300 or more to the INVITE, or
// session-expiry passing with nothing of the dialog seen gives the slot
// back; an INVITE of an account at its bound is refused as capacity. The
// server behind the filter is the oracle: it notes every call it answered
// and every hang-up it got.

// capacityConfig is the daemon's file: one account, the agent's address,
// whose rate never limits (cps and burst of 1000), bounded to sessions
// dialogs at once; refused INVITEs are answered 503. extra is more
// top-level keys.
func capacityConfig(tb *harness.Testbed, sessions int, extra string) string {
	return harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\n" + extra +
		"classes:\n  sip-invite: {action: reject}\n" +
		"customers:\n  - {name: callers, accounts: [{name: trunk, source: " + harness.AgentIP + "/32, " +
		"cps: 1000, burst: 1000, max-sessions: " + harness.Itoa(sessions) + "}]}\n"
}

// callEvent is an INVITE or a BYE the server got, the first of its Call-ID.
type callEvent struct {
	CallID string
	Bye    bool
	At     time.Time
}

// callLog is a SIP server behind the filter that answers every INVITE and
// BYE 200 (the INVITE's with a Contact, which caller-uac sends its ACK and
// BYE to) and notes, per Call-ID, when the INVITE came and when the BYE
// did, in the order they came: a call is up at the server from its INVITE
// to its BYE. Retransmissions are answered and not noted again.
type callLog struct {
	mu     sync.Mutex
	events []callEvent
	seen   map[string]bool // "INVITE id", "BYE id"
}

func startCallLog(t *testing.T, ns string, at netip.AddrPort) *callLog {
	c := &callLog{seen: map[string]bool{}}
	respond(t, ns, at, func(req *sip.Request) []byte {
		resp := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
		if (req.IsInvite() || req.Method == sip.BYE) && req.CallID() != nil {
			id := req.CallID().Value()
			c.mu.Lock()
			if k := string(req.Method) + " " + id; !c.seen[k] {
				c.seen[k] = true
				c.events = append(c.events, callEvent{CallID: id, Bye: req.Method == sip.BYE, At: time.Now()})
			}
			c.mu.Unlock()
		}
		if req.IsInvite() {
			resp.AppendHeader(sip.NewHeader("Contact", "<sip:server@"+at.String()+">"))
		}
		return []byte(resp.String())
	})
	return c
}

// figures are the calls the server answered, those it got the BYE of, and
// the most that were up at once.
func (c *callLog) figures() (answered, hungUp, mostUp int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	up := map[string]bool{}
	for _, e := range c.events {
		switch {
		case !e.Bye:
			answered++
			up[e.CallID] = true
			mostUp = max(mostUp, len(up))
		case up[e.CallID]:
			hungUp++
			delete(up, e.CallID)
		}
	}
	return answered, hungUp, mostUp
}

// invited says whether the server got the INVITE of callID.
func (c *callLog) invited(callID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen["INVITE "+callID]
}

// callerRejects are the daemon's reject records of the agent's INVITEs on
// the box's interface (egress's aside), by reason.
func callerRejects(t *testing.T, tb *harness.Testbed) map[string]uint64 {
	t.Helper()
	return callerRejectsFrom(t, tb, harness.AgentIP)
}

// callerRejectsFrom is callerRejects of the INVITEs from source.
func callerRejectsFrom(t *testing.T, tb *harness.Testbed, source string) map[string]uint64 {
	t.Helper()
	return rejectsWhere(t, tb, func(l api.RejectLine) bool {
		return l.Interface != "egress" && l.Source == source && l.Class == "sip-invite"
	})
}

// waitRejects waits up to 5 s for the capacity records to count want (the
// last refusals may not have been read from the fast path yet) and
// returns the records by reason.
func waitRejects(t *testing.T, tb *harness.Testbed, want uint64) map[string]uint64 {
	t.Helper()
	var got map[string]uint64
	testenv.Poll(5*time.Second, 100*time.Millisecond, func() bool {
		got = callerRejects(t, tb)
		return got["capacity"] >= want
	})
	return got
}

// TestMaxSessions: an account of max-sessions 3 calls at 10 a second,
// each call held 5 s. The first three are answered; every INVITE while
// they are up is refused with 503, which sipp counts as a failed call;
// once they hang up, the next calls pass. The server never has more than
// 3 calls up, has 3 up at some point, and more than 3 complete; every
// call either reached the server and completed or was refused, and the
// capacity records count the refused ones.
func TestMaxSessions(t *testing.T) {
	tb := harness.SipTestbed(t)
	server := startCallLog(t, tb.Box, dispProxy)
	tb.StartDaemon(t, harness.WriteConfig(t, capacityConfig(tb, 3, "")))
	// 80 calls at 10 a second are placed over 8 s: the hangups of the
	// first three come at 5 s, and the calls after them must find the
	// slots free again. -l 10 never binds: a refused call ends at once.
	const calls, limit = 80, 3
	c := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "caller-uac"),
		"-i", harness.AgentIP, "-p", "5071", "-t", "u1", "-r", "10", "-m", harness.Itoa(calls), "-l", "10",
		"-d", "5000", "-recv_timeout", "5000", dispProxy.String())
	// sipp exits 1 when some calls failed: the refused ones.
	var exit *exec.ExitError
	if err := c.Wait(60 * time.Second); err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("sipp: %v\n%s", err, c.Log())
	}
	log := c.Log()
	successful, failed := sippCount(t, log, "Successful call"), sippCount(t, log, "Failed call")
	if successful+failed != calls {
		t.Fatalf("sipp counts %d successful and %d failed calls, want the %d placed\n%s", successful, failed, calls, log)
	}
	answered, hungUp, mostUp := server.figures()
	t.Logf("%d calls: at most %d up at once at the server, %d completed, %d refused", calls, mostUp, hungUp, failed)
	if mostUp > limit {
		t.Errorf("the server had %d calls up at once: more than max-sessions %d", mostUp, limit)
	}
	if mostUp < limit {
		t.Errorf("the server had at most %d calls up at once: the account never reached max-sessions %d", mostUp, limit)
	}
	if hungUp <= limit {
		t.Errorf("%d calls completed: the slots the first %d gave back at their BYEs were not taken again", hungUp, limit)
	}
	// A call the filter admitted reaches the server and completes; the
	// rest got the filter's 503.
	if answered != successful || hungUp != successful {
		t.Errorf("the server answered %d calls and got %d BYEs; sipp completed %d", answered, hungUp, successful)
	}
	got := waitRejects(t, tb, uint64(failed))
	if got["capacity"] != uint64(failed) {
		t.Errorf("capacity records count %d, want the %d calls refused (sipp's failed calls)", got["capacity"], failed)
	}
	if len(got) != 1 {
		t.Errorf("rejects by reason: %v, want capacity alone", got)
	}
	t.Logf("rejects by class and reason in show stats: %v", tb.StatsByReason(t))
}

// placed is one call of invite-no-bye as the caller saw it.
type placed struct {
	CallID  string
	Sent    time.Time // its INVITE left
	Acked   time.Time // its ACK left; zero if refused
	Refused bool      // it got the filter's 503
}

// placeCall places one call of invite-no-bye from the agent's address
// and local port, and waits for it to end.
func placeCall(t *testing.T, tb *harness.Testbed, port int) placed {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "caller.log")
	s := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "invite-no-bye"),
		"-i", harness.AgentIP, "-p", harness.Itoa(port), "-t", "u1", "-m", "1",
		"-recv_timeout", "2000", "-trace_logs", "-log_file", logFile, dispProxy.String())
	if err := s.Wait(10 * time.Second); err != nil {
		t.Fatalf("a call from port %d got neither 200 nor 503: %v\n%s", port, err, s.Log())
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// xdpcac-caller|KIND|DATE<TAB>TIME<TAB>EPOCH|CALL-ID
	var p placed
	at := map[string]time.Time{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 || f[0] != "xdpcac-caller" {
			continue
		}
		stamp := strings.Split(f[2], "\t")
		when, err := testenv.ParseEpoch(stamp[len(stamp)-1])
		if err != nil {
			t.Fatalf("%s: %v", logFile, err)
		}
		at[f[1]], p.CallID = when, f[3]
	}
	p.Sent, p.Acked, p.Refused = at["sent"], at["acked"], !at["refused"].IsZero()
	if p.Sent.IsZero() || p.Refused == !p.Acked.IsZero() {
		t.Fatalf("the call from port %d logged %v: want sent, then acked or refused\n%s", port, at, s.Log())
	}
	return p
}

// TestLostByeExpires: an account of max-sessions 1 and session-expiry 3s.
// A call is answered and ACKed, and its BYE never comes. A call at once
// after it is refused as capacity: the lost call still holds the slot.
// Calls placed one after another from then on are refused until 3 s of
// the lost dialog's silence have passed and the daemon has swept it, for
// which 3 s more are allowed; then a call passes.
func TestLostByeExpires(t *testing.T) {
	const expiry, sweep = 3 * time.Second, 3 * time.Second
	tb := harness.SipTestbed(t)
	server := startCallLog(t, tb.Box, dispProxy)
	tb.StartDaemon(t, harness.WriteConfig(t, capacityConfig(tb, 1, "session-expiry: 3s\n")))
	// Each call from a port of its own, above the SIP ports of the file.
	port := 5100
	call := func() placed {
		t.Helper()
		port++
		return placeCall(t, tb, port)
	}
	lost := call()
	if lost.Refused {
		t.Fatal("the first call was refused: nothing held the account's slot")
	}
	if !server.invited(lost.CallID) {
		t.Fatal("the server did not get the INVITE of the call the filter admitted")
	}
	next := call()
	if since := next.Sent.Sub(lost.Acked); since >= expiry {
		t.Fatalf("the second call was placed %v after the lost one's ACK, past session-expiry: too late to show its slot held", since)
	}
	if !next.Refused {
		t.Fatal("a call at once after the lost one passed: max-sessions 1 did not count the dialog whose BYE never came")
	}
	refused, lastRefused := 1, next.Sent
	var passed placed
	testenv.Poll(time.Until(lost.Acked.Add(expiry+sweep+time.Second)), 100*time.Millisecond, func() bool {
		p := call()
		if p.Refused {
			refused, lastRefused = refused+1, p.Sent
			return false
		}
		passed = p
		return true
	})
	if passed.Sent.IsZero() {
		t.Fatalf("no call passed within %v of the lost call's ACK (%d refused, the last %v after it): its slot was never given back",
			expiry+sweep+time.Second, refused, lastRefused.Sub(lost.Acked))
	}
	t.Logf("the lost call's ACK to the first call that passed: %v; the last refused was placed %v after the ACK; %d refused",
		passed.Sent.Sub(lost.Acked), lastRefused.Sub(lost.Acked), refused)
	// The INVITE that passed left after the slot was given back, at the
	// earliest session-expiry after the ACK; the slack is for sipp's
	// clock, read beside its sends, not at them.
	if since := passed.Sent.Sub(lost.Acked); since < expiry-100*time.Millisecond {
		t.Errorf("a call passed %v after the lost call's ACK: its slot was given back before session-expiry %v", since, expiry)
	}
	if since := lastRefused.Sub(lost.Acked); since > expiry+sweep {
		t.Errorf("a call was refused %v after the lost call's ACK: its slot was held past session-expiry %v and a sweep", since, expiry)
	}
	if !server.invited(passed.CallID) {
		t.Error("the server did not get the INVITE of the call that passed")
	}
	if answered, hungUp, _ := server.figures(); answered != 2 || hungUp != 0 {
		t.Errorf("the server answered %d calls and got %d BYEs, want the lost call and the one that passed, and no BYE", answered, hungUp)
	}
	got := waitRejects(t, tb, uint64(refused))
	if got["capacity"] != uint64(refused) || len(got) != 1 {
		t.Errorf("rejects by reason: %v, want capacity alone, %d: the calls refused", got, refused)
	}
}
