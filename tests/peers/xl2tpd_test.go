package peers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The real L2TP peers: xl2tpd as the LNS on the box (192.0.2.1, behind the
// filter) and as a LAC on the peer (192.0.2.2, or 192.0.2.3 for a second
// one). Only the control messages matter here: SCCRQ, SCCRP and SCCCN set
// up the tunnel, ICRQ, ICRP and ICCN the call. Each side then starts what
// it takes for pppd: a stand-in that only waits (below), so that a call
// stays up as long as its tunnel does whether or not the kernel has PPP.

// lnsSection is the LNS's: any LAC, no PPP authentication, PPP addresses
// from TEST-NET-2 so that none can clash with the veth's.
const lnsSection = `[lns default]
ip range = 198.51.100.10-198.51.100.20
local ip = 198.51.100.1
require authentication = no
`

// lacSection dials the box by itself as soon as xl2tpd starts (autodial),
// once: a LAC that redialled would send SCCRQs the test did not plan.
const lacSection = `[lac box]
lns = ` + harness.BoxIP + `
autodial = yes
redial = no
require authentication = no
`

// xl2tpdConf is a whole configuration: the daemon bound to listen:1701
// (so a LAC's packets come from that address), with no access control and
// no tunnel secret, and section, whose pppd reads options.
func xl2tpdConf(listen, section, options string) string {
	return fmt.Sprintf("[global]\nlisten-addr = %s\nport = 1701\naccess control = no\n\n%spppoptfile = %s\n",
		listen, section, options)
}

// lnsEstablished is what xl2tpd logs when a tunnel comes up (after SCCCN),
// lnsCall what it logs when a call does (after ICCN, which only follows an
// ICRQ the LNS answered with an ICRP). Both name the LAC's address.
const (
	lnsEstablished = "Connection established to "
	lnsCall        = "Call established with "
)

// xl2tpd is an xl2tpd running in the foreground in a namespace, killed
// and waited for when the test ends, its log shown if the test failed.
type xl2tpd struct {
	p   *testenv.Process // its log, stdout and stderr: -D logs there
	ctl string           // the control pipe
}

// startXl2tpd runs `ip netns exec NS xl2tpd -D` with a configuration of
// listen and section, and its pid file, control pipe, secrets file and
// pppd options, all in a directory of its own under t.TempDir(): nothing
// of the machine's /etc/xl2tpd or /run is read or written.
func startXl2tpd(t *testing.T, ns, listen, section string) *xl2tpd {
	t.Helper()
	bin := testenv.RequireTool(t, "xl2tpd", "xl2tpd")
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	files := map[string]string{
		"xl2tpd.conf": xl2tpdConf(listen, section, path("options")),
		// noip: should pppd get as far as LCP (where /dev/ppp exists),
		// it brings up no IPCP, so runs no ip-up script of the machine.
		"options": "noip\n",
		"secrets": "",
		// The pppd xl2tpd starts for a call (its path is built in): one
		// that waits until xl2tpd ends the call, in place of the
		// machine's, bound over it in the namespace's own mounts.
		"pppd": "#!/bin/sh\nexec sleep 3600\n",
	}
	for name, body := range files {
		if err := os.WriteFile(path(name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path("pppd"), 0o755); err != nil {
		t.Fatal(err)
	}
	x := &xl2tpd{ctl: path("l2tp-control")}
	// ip netns exec gives the command mounts of its own, so the bind
	// stays there; sh execs xl2tpd in its place.
	cmd := testenv.Command(ns, "sh", "-c",
		`[ -e /usr/sbin/pppd ] && mount --bind "$1" /usr/sbin/pppd; shift; exec "$@"`, "sh", path("pppd"),
		bin, "-D", "-c", path("xl2tpd.conf"),
		"-p", path("xl2tpd.pid"), "-C", x.ctl, "-s", path("secrets"))
	// SIGTERM, on which it closes its tunnels and ends its pppd; the
	// group SIGKILLed 3 s on, for any pppd left.
	x.p = testenv.Start(t, cmd, 3*time.Second)
	t.Cleanup(func() {
		x.Stop()
		if t.Failed() {
			t.Logf("xl2tpd %s in %s:\n%s", listen, ns, x.p.Log.String())
		}
	})
	return x
}

// Stop ends xl2tpd: SIGTERM first, on which it closes its tunnels and
// ends its pppd; SIGKILL to the group after 3 s, and for any pppd left.
// It waits for the exit and may be called again.
func (x *xl2tpd) Stop() { x.p.Stop() }

// count is how many lines of the log hold s.
func (x *xl2tpd) count(s string) int {
	n := 0
	for _, line := range strings.Split(x.p.Log.String(), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// l2tpTestbed attaches the filter with classes to the box side of a
// harness.SipTestbed and starts the LNS there; it returns once the LNS has bound
// UDP port 1701. A LAC must not dial before that: its SCCRQ would be
// admitted, spend a token, and find no one.
func l2tpTestbed(t *testing.T, classes string) (*harness.Testbed, *xl2tpd) {
	t.Helper()
	return l2tpTestbedFile(t, harness.WriteConfig(t, harness.E2eConfig+"classes:\n"+classes))
}

// l2tpTestbedFile is l2tpTestbed with the filter's configuration file.
func l2tpTestbedFile(t *testing.T, cfg string) (*harness.Testbed, *xl2tpd) {
	t.Helper()
	tb := harness.SipTestbed(t)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	lns := startXl2tpd(t, tb.Box, harness.BoxIP, lnsSection)
	// /proc/PID/net is the namespace of the process (ip netns exec execs
	// xl2tpd in place), where only the LNS binds 1701 (hex 06A5).
	testenv.WaitFor(t, func() bool {
		select {
		case <-lns.p.Done():
			t.Fatalf("the LNS exited at start:\n%s", lns.p.Log.String())
		default:
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/udp", lns.p.Pid()))
		return err == nil && strings.Contains(string(b), ":06A5 ")
	})
	return tb, lns
}

// TestRealL2TP: a LAC opens a tunnel and a call to the LNS behind the
// filter, which admits the SCCRQ and the ICRQ and counts them; the LNS
// logs both the tunnel and the call as established.
func TestRealL2TP(t *testing.T) {
	tb, lns := l2tpTestbed(t, "  l2tp-sccrq: {cps: 10}\n  l2tp-icrq: {cps: 10}\n")
	startXl2tpd(t, tb.Peer, harness.AgentIP, lacSection)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["l2tp-icrq"].Admitted >= 1 })
	// The ICCN follows the ICRP at once; the LNS logs the call on it.
	testenv.WaitFor(t, func() bool { return lns.count(lnsCall+harness.AgentIP) >= 1 })
	if n := lns.count(lnsEstablished + harness.AgentIP); n != 1 {
		t.Errorf("the LNS logged %d tunnels established with %s, want 1", n, harness.AgentIP)
	}
	st := tb.Stats(t)
	for _, class := range []string{"l2tp-sccrq", "l2tp-icrq"} {
		if c := st.Classes[class]; c.Admitted < 1 || c.Rejected != 0 {
			t.Errorf("%s: %+v, want admitted and none rejected", class, c)
		}
	}
	t.Logf("l2tp-sccrq %+v, l2tp-icrq %+v", st.Classes["l2tp-sccrq"], st.Classes["l2tp-icrq"])
}

// TestRealL2TPRefused: the filter admits one SCCRQ and no more (a bucket
// of one that refills in 1000 s). A first LAC spends it on a tunnel and
// leaves; a second LAC's SCCRQ, and the retransmission xl2tpd sends when
// no SCCRP comes, are dropped by class: the LNS never hears of it.
func TestRealL2TPRefused(t *testing.T) {
	tb, lns := l2tpTestbed(t, "  l2tp-sccrq: {cps: 0.001, burst: 1}\n")
	first := startXl2tpd(t, tb.Peer, harness.AgentIP, lacSection)
	testenv.WaitFor(t, func() bool { return lns.count(lnsEstablished+harness.AgentIP) == 1 })
	first.Stop()

	second := startXl2tpd(t, tb.Peer, harness.StrangerIP, lacSection)
	// xl2tpd retransmits an unanswered SCCRQ after about a second: wait
	// for two refusals, so that the LNS had time to log anything it got.
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["l2tp-sccrq"].Reasons["class"] >= 2 })
	sccrq := tb.Stats(t).Classes["l2tp-sccrq"]
	t.Logf("l2tp-sccrq: %+v", sccrq)
	if sccrq.Admitted != 1 {
		t.Errorf("l2tp-sccrq: %d admitted, want only the first LAC's", sccrq.Admitted)
	}
	if n := lns.count(lnsEstablished); n != 1 {
		t.Errorf("the LNS logged %d tunnels established, want only the first LAC's", n)
	}
	if n := lns.count(harness.StrangerIP); n != 0 {
		t.Errorf("the LNS logged %d lines about the refused LAC %s", n, harness.StrangerIP)
	}
	if n := second.count(lnsEstablished); n != 0 {
		t.Errorf("the refused LAC logged %d tunnels established", n)
	}
}
