package daemon_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// capacityExtra is an account of the agent's address bounded to one
// dialog, whose silence ends it after 2 s.
const capacityExtra = "session-expiry: 2s\n" +
	"customers:\n  - {name: callers, accounts: [{name: trunk, source: " + agentIP + "/32, cps: 1000, burst: 1000, max-sessions: 1}]}\n"

// heldDialogs are the dialogs that hold sessions in the fast path.
func heldDialogs(t *testing.T, state string) int {
	t.Helper()
	p, err := loader.OpenShared(state)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	held, err := maps.ReadSessions(maps.SessionMapsOf(&p.XdpMaps).Sessions)
	if err != nil {
		t.Fatal(err)
	}
	return len(held)
}

func jobOf(st api.Status, name string) api.Job {
	for _, j := range st.Jobs {
		if j.Name == name {
			return j
		}
	}
	return api.Job{}
}

// TestAgentsFailSessionsGivenBack (docs/design.md, "The daemon's rooms"): the agents
// monitor of a new configuration fails to start (its realm's address is
// not on the box, as when it goes between a reload's checks and the
// start). The session keeper is no room of the monitor's: a dialog of
// max-sessions 1 whose silence passes session-expiry is still given back,
// and the next call is held in its place; status names the agents' error
// and degrades, until a configuration whose agents start.
func TestAgentsFailSessionsGivenBack(t *testing.T) {
	r, dir := start(t, capacityExtra)
	src := netip.MustParseAddr(agentIP)
	testenvSend(t, r, harness.InviteFrom(src, harness.CallID(1)))
	until(t, 5*time.Second, "the first call holds its session", func() bool { return heldDialogs(t, r.state) == 1 })

	bad := writeFile(t, dir, "bad.yaml", strings.Replace(config(r.iface, capacityExtra), "address: "+boxIP, "address: 203.0.113.9", 1))
	err := r.d.SwapSIPUnchecked(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "203.0.113.9") {
		t.Fatalf("agents pinged from an address not on the box: %v", err)
	}
	if j := jobOf(r.status(t), "agents"); j.State != api.JobFailed || !strings.Contains(j.Error, "203.0.113.9") {
		t.Errorf("status's agents job %+v: want failed with the bind's error", j)
	}
	for _, name := range []string{"sessions", "sip-events", "journal"} {
		if j := jobOf(r.status(t), name); j.State != api.JobRunning {
			t.Errorf("job %s %+v: want running, whatever the agents", name, j)
		}
	}
	rep := api.StatusReport{Daemon: ptr(r.status(t)), Interfaces: []api.InterfaceStatus{{Interface: r.iface}}}
	if why := strings.Join(rep.DegradedBy(), "; "); !strings.Contains(why, "job agents failed") {
		t.Errorf("degraded by %q: want the agents' job", why)
	}

	until(t, 8*time.Second, "the silent dialog given back past session-expiry", func() bool { return heldDialogs(t, r.state) == 0 })
	testenvSend(t, r, harness.InviteFrom(src, harness.CallID(2)))
	until(t, 5*time.Second, "the next call holds the session given back", func() bool { return heldDialogs(t, r.state) == 1 })
	if j := jobOf(r.status(t), "agents"); j.State != api.JobFailed {
		t.Errorf("agents job %+v before a good configuration: want still failed", j)
	}

	good := writeFile(t, dir, "good.yaml", config(r.iface, capacityExtra))
	if err := api.Dial(r.state).Apply(good, false); err != nil {
		t.Fatalf("apply a file whose agents start: %v", err)
	}
	st := r.status(t)
	if j := jobOf(st, "agents"); j.State != api.JobRunning || st.LastError != "" {
		t.Errorf("after a good apply: agents %+v, last error %q", j, st.LastError)
	}
}

func ptr[T any](v T) *T { return &v }

func testenvSend(t *testing.T, r *running, frame []byte) {
	t.Helper()
	testenv.Send(t, r.peer, r.peerIf, [][]byte{frame})
}
