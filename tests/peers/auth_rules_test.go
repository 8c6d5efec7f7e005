package peers

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// answering is a SIP server behind the filter that answers every INVITE
// and BYE 200 and counts the INVITEs it got by the user of their From.
type answering struct {
	mu      sync.Mutex
	invites map[string]int
}

func startAnswering(t *testing.T, ns string, at netip.AddrPort) *answering {
	a := &answering{invites: map[string]int{}}
	respond(t, ns, at, func(req *sip.Request) []byte {
		if req.IsInvite() && req.From() != nil {
			a.mu.Lock()
			a.invites[req.From().Address.User]++
			a.mu.Unlock()
		}
		return []byte(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil).String())
	})
	return a
}

// by sums the INVITEs received whose From user starts with prefix.
func (a *answering) by(prefix string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for u, c := range a.invites {
		if strings.HasPrefix(u, prefix) {
			n += c
		}
	}
	return n
}

// TestAuthenticationRules: three callers behind one source address, told
// apart only by their CLI (the From user, from sipp's injection file) and
// the number they call (sipp's -s): an account by CLI prefix 4930 holds
// the first to its burst of 3, an account by called-number prefix 0800 the
// second to its burst of 4, and the third, in no account, is not held at
// all: the source address is no account's, and its limits are the
// accounts' alone. show rejects names the account of each refusal.
func TestAuthenticationRules(t *testing.T) {
	tb := harness.SipTestbed(t)
	server := startAnswering(t, tb.Box, dispProxy)
	tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"classes:\n  sip-invite: {action: reject}\n"+
		"customers:\n"+
		"  - {name: callers, accounts: [{name: berlin, cli: \"4930\", cps: 0.001, burst: 3}]}\n"+
		"  - {name: freephone, accounts: [{name: tollfree, called: \"0800\", cps: 0.001, burst: 4}]}\n"))
	dir := t.TempDir()
	caller := func(port, cli, called string) *testenv.Sipp {
		inf := filepath.Join(dir, cli+".csv")
		body := "SEQUENTIAL\n"
		for i := 0; i < 10; i++ {
			body += cli + harness.Itoa(1000+i) + ";\n"
		}
		if err := os.WriteFile(inf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "invite-cli"), "-inf", inf, "-s", called,
			"-i", harness.AgentIP, "-p", port, "-t", "u1", "-m", "10", "-r", "20", "-recv_timeout", "5000", dispProxy.String())
	}
	for _, c := range []*testenv.Sipp{
		caller("5071", "4930", "5551234"), // by its CLI
		caller("5072", "6000", "0800123"), // by the number it calls
		caller("5073", "7000", "7777"),    // in no account
	} {
		if err := c.Wait(30 * time.Second); err != nil {
			t.Errorf("sipp: %v\n%s", err, c.Log())
		}
	}
	if got := server.by("4930"); got != 3 {
		t.Errorf("the server got %d INVITEs of CLI 4930..., want the account's burst of 3", got)
	}
	if got := server.by("6000"); got != 4 {
		t.Errorf("the server got %d INVITEs to 0800..., want the account's burst of 4", got)
	}
	if got := server.by("7000"); got != 10 {
		t.Errorf("the server got %d of the 10 INVITEs in no account", got)
	}
	st := tb.StatsByReason(t)
	if st["sip-invite account"] != 13 {
		t.Errorf("rejects by reason: %v, want 13 account", st)
	}
	out, stderr, err := tb.Cacctl(t, "show", "rejects")
	if err != nil {
		t.Fatalf("show rejects: %v: %s", err, stderr)
	}
	t.Logf("show rejects:\n%s", out)
	for _, want := range []string{"cli 4930", "called 0800"} {
		if !strings.Contains(out, want) {
			t.Errorf("show rejects does not name the rule %q:\n%s", want, out)
		}
	}
}
