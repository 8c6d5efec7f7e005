package peers

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/internal/storm"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// scannerClasses hold each stranger to 3 requests and then one a second,
// per class, and the calls of all to 20 a second with a burst of 20.
const scannerClasses = `classes:
  sip-invite:   {cps: 20, burst: 20, per-source: {cps: 1, burst: 3}}
  sip-options:  {per-source: {cps: 1, burst: 3}}
  sip-register: {per-source: {cps: 1, burst: 3}}
`

// TestScanners: sipvicious' svwar, the scanner of SIP extensions, and
// svmap, of SIP servers, run from a stranger's address against Kamailio
// behind the filter. Kamailio handles no more of their REGISTERs, INVITEs
// and OPTIONS than the per-source limits allow, and every one it handled
// was charged.
func TestScanners(t *testing.T) {
	testenv.RequireTool(t, "svwar", "sipvicious")
	testenv.RequireTool(t, "svmap", "sipvicious")
	b := newKamBed(t, scannerClasses)
	for i, c := range []struct {
		tool   string
		args   []string
		method string
		max    int // requests the tool sends at most
	}{
		{"svwar", []string{"-m", "REGISTER", "-e", "100-999"}, "REGISTER", 900},
		{"svwar", []string{"-m", "INVITE", "-e", "100-999"}, "INVITE", 900},
		{"svwar", []string{"-m", "OPTIONS", "-e", "100-999"}, "OPTIONS", 900},
		{"svmap", []string{"-m", "INVITE", "-p", "5060,5080"}, "INVITE", 2},
		{"svmap", []string{"-p", "5060,5080"}, "OPTIONS", 2},
	} {
		t.Run(c.tool+"-"+c.method, func(t *testing.T) {
			src := b.source(t, 40+i, false)
			defer b.sendFrom(t, src)()
			before, bv := b.charged(t)
			handledBefore := b.handled(c.method)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append([]string{"-b", src.String(), "-x", src.String()}, c.args...)
			if c.tool == "svwar" {
				// go on without answers: the filter refuses most of them
				args = append(args, "--force", "--maximumtime", "3")
			}
			args = append(args, kamBoxV4)
			start := time.Now()
			out, err := testenv.CommandContext(ctx, b.Peer, c.tool, args...).CombinedOutput()
			elapsed := time.Since(start)
			if ctx.Err() != nil {
				t.Fatalf("%s ran for a minute: %v\n%s", c.tool, err, out)
			}
			b.settle("")
			handled := b.handled(c.method) - handledBefore
			after, v := b.charged(t)
			limit := 3 + int(elapsed.Seconds()) + 1
			class := "sip-" + strings.ToLower(c.method)
			t.Logf("%s %s for %v: Kamailio handled %d %ss (limit %d); the filter charged %d, refused %d as source",
				c.tool, strings.Join(c.args, " "), elapsed.Round(time.Millisecond), handled, c.method, limit,
				after-before, v.Classes[class].Reasons["source"]-bv.Classes[class].Reasons["source"])
			if handled == 0 {
				t.Errorf("Kamailio handled none of %s's %ss: nothing was compared\n%s", c.tool, c.method, out)
			}
			if handled > min(limit, c.max) {
				t.Errorf("Kamailio handled %d %ss of %s, more than the per-source limit allows (%d)", handled, c.method, c.tool, limit)
			}
			if uint64(handled) > after-before {
				t.Errorf("Kamailio handled %d, the filter charged %d", handled, after-before)
			}
		})
	}
}

// handled counts the requests of method that Kamailio handled from the
// peer's side (whatever address of it a tool sent from).
func (b *kamBed) handled(method string) int {
	n := 0
	for _, r := range b.k.Requests() {
		if strings.HasPrefix(r.Source, "198.51.100.") && r.Method == method {
			n++
		}
	}
	return n
}

// TestTrustedAgentUnderFlood: sipp as a session agent places 100 calls
// through the filter to Kamailio while 100 spoofed sources flood INVITEs,
// each below its own per-source limit but together four times the class
// limit; every one of the agent's calls completes, because strangers leave
// the class bucket's reserve to the agent, and the strangers still get
// the rest of the class's rate.
func TestTrustedAgentUnderFlood(t *testing.T) {
	testenv.RequireTool(t, "sipp", "sip-tester")
	agent := kamPeerV4
	b := newKamBed(t, scannerClasses+
		"realms: [{name: core, address: "+kamBoxV4+"}]\n"+
		"session-agents: [{name: pbx, hostname: "+agent+", realm-id: core, cps: 1000}]\n")
	spoofed := netip.MustParseAddr("203.0.113.1")
	flood := storm.SIPFlood("INVITE", spoofed, 100, netip.MustParseAddr(kamBoxV4))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		g := storm.Generator{Name: "spoofed-invites", Rate: 80, Duration: 20 * time.Second, Frame: func(i int) []byte {
			f := flood(i)
			copy(f[0:6], b.boxMAC[:]) // to the box's stack, so that Kamailio sees what passes
			return f
		}}
		_, err := g.Run(ctx, b.Peer, b.PeerIfc)
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("flood: %v", err)
		}
	}()
	// The flood has taken the class bucket down to the reserve once the
	// class refuses strangers.
	if !testenv.Poll(time.Minute, 50*time.Millisecond, func() bool { return b.Stats(t).Classes["sip-invite"].Reasons["class"] > 0 }) {
		t.Fatal("the flood never met the class limit within a minute: the test would show nothing")
	}

	uac := testenv.StartSipp(t, b.Peer, "-sf", testenv.ScenarioPath(t, "invite-uac-200"), "-i", agent, "-p", "5070",
		"-t", "u1", "-m", "100", "-r", "10", "-recv_timeout", "5000", kamBoxV4+":5060")
	err := uac.Wait(40 * time.Second)
	s := b.Stats(t).Classes["sip-invite"]
	strangers := 0
	for _, r := range b.k.Requests() {
		if r.Method == "INVITE" && strings.HasPrefix(r.Source, "203.0.113.") {
			strangers++
		}
	}
	t.Logf("sip-invite: %d admitted, refused %v; Kamailio handled %d of the strangers' INVITEs", s.Admitted, s.Reasons, strangers)
	if err != nil {
		t.Fatalf("the agent's 100 calls did not all complete: %v\n%s", err, uac.Log())
	}
	if strangers == 0 || s.Reasons["class"] == 0 {
		t.Errorf("the flood never met the class limit (%d strangers' INVITEs handled, %d refused as class): the test shows nothing",
			strangers, s.Reasons["class"])
	}
	// A 503 as sipp's error trace shows it: its screen prints Unix times,
	// which may hold the digits 503 too.
	if log := uac.Log(); strings.Contains(log, "SIP/2.0 503") {
		t.Errorf("the agent got a 503:\n%s", log)
	}
}
