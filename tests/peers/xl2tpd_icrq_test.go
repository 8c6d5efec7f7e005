package peers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestRealL2TPICRQRefused: xl2tpd as LAC and LNS, with the LNS behind the
// filter and l2tp-icrq {cps: 0.02, burst: 1}. The LAC opens a tunnel with
// a call, then places 19 more calls on it within 2 s; they are refused
// and answered in the LNS's name, so the LAC does not retransmit them
// until it closes the tunnel, as it did when they were dropped. A minute
// later the tunnel and its call are still up and neither end logged a
// message out of order; then the call is hung up and a new one, admitted
// by the refilled bucket, comes up in the same tunnel: the LNS takes the
// LAC's messages in sequence, 19 answered ICRQs later.
//
// One admitted call at a time: xl2tpd 1.3 places a call on a tunnel by
// number (control command "c TUNNEL-ID") without a LAC section, and
// crashes when such a call is answered (it reads the missing section's
// pass-peer setting), so only refused calls can be placed that way.
func TestRealL2TPICRQRefused(t *testing.T) {
	t.Parallel()
	icrqStorm(t, "classes:\n  l2tp-icrq: {cps: 0.02, burst: 1}\n", "class")
}

// TestRealL2TPVPDNCharge is the same with the charge budget refusing the
// calls: `call admission limit 10`, `vpdn 10 50`: one call in force.
func TestRealL2TPVPDNCharge(t *testing.T) {
	t.Parallel()
	icrqStorm(t, "call-admission: |\n  call admission limit 10\n  call admission vpdn 10 50\n", "total-charge")
}

// lacLocal is the LAC's log line of a tunnel come up, with its own ID;
// lacCall that of a call, with the call's own ID.
var (
	lacLocal = regexp.MustCompile(`Connection established to [0-9.]+, 1701\.\s+Local: (\d+)`)
	lacCall  = regexp.MustCompile(`Call established with [0-9.]+, Local: (\d+)`)
)

// The log lines of a tunnel or call going down, or of a message out of
// order: none may appear while the filter refuses calls.
var brokenTunnel = []string{"out of order", "Maximum retries exceeded", "Connection closed", "Disconnecting call",
	"pppd exited", "Hanging up"}

func icrqStorm(t *testing.T, config, reason string) {
	tb, lns := l2tpTestbedConfig(t, config)
	// The answer to a refused ICRQ leaves with XDP_TX. A veth hands such
	// a frame to its peer at once only when the peer runs an XDP program
	// of its own (any: this one passes everything); else it waits for
	// the next frame sent the usual way. A NIC sends it at once.
	peerXDP(t, tb)
	lac := startXl2tpd(t, tb.Peer, harness.AgentIP, lacSection)
	testenv.WaitFor(t, func() bool { return lns.count(lnsCall+harness.AgentIP) == 1 })
	tunnel := lac.logged(t, lacLocal)

	// 19 more calls on the tunnel, 100 ms apart: 20 ICRQs in 2 s.
	for i := 0; i < 19; i++ {
		lac.control(t, fmt.Sprintf("c %s", tunnel))
		time.Sleep(100 * time.Millisecond)
	}
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["l2tp-icrq"].Seen >= 20 })
	st := tb.Stats(t)
	icrq := st.Classes["l2tp-icrq"]
	t.Logf("l2tp-icrq %+v; answered %d, copies %d, unanswered %d", icrq, st.L2TPAnswered, st.L2TPRetransmits, st.L2TPUnanswered)
	if icrq.Admitted != 1 || icrq.Reasons[reason] != 19 || st.L2TPAnswered != 19 || st.L2TPUnanswered != 0 {
		t.Errorf("l2tp-icrq admitted %d, rejected by %s %d, answered %d, unanswered %d; want 1, 19, 19, 0",
			icrq.Admitted, reason, icrq.Reasons[reason], st.L2TPAnswered, st.L2TPUnanswered)
	}

	// Unanswered, xl2tpd gives up on a message after 5 retransmissions
	// (about 30 s) and closes the tunnel; a minute shows it did not.
	time.Sleep(60 * time.Second)
	for _, x := range []*xl2tpd{lns, lac} {
		for _, s := range brokenTunnel {
			if n := x.count(s); n != 0 {
				t.Errorf("%d log lines of %q", n, s)
			}
		}
	}
	if n := lns.count(lnsCall + harness.AgentIP); n != 1 {
		t.Errorf("the LNS logged %d calls established, want the one admitted", n)
	}
	// The bucket has refilled (or the charge expired): hang the call up,
	// place one again, and it comes up in the same tunnel.
	lac.control(t, "h "+lac.logged(t, lacCall))
	testenv.WaitFor(t, func() bool { return lac.count(" disconnected") == 1 })
	lac.control(t, "c box")
	testenv.WaitFor(t, func() bool { return lns.count(lnsCall+harness.AgentIP) == 2 })
	if n := lns.count(lnsEstablished + harness.AgentIP); n != 1 {
		t.Errorf("the LNS logged %d tunnels established, want the one", n)
	}
	if n := lns.count("out of order"); n != 0 {
		t.Errorf("the LNS logged %d messages out of order", n)
	}
	if st := tb.Stats(t); st.L2TPRetransmits != 0 {
		t.Logf("%d ICRQ copies taken without a charge", st.L2TPRetransmits)
	}
}

// peerXDP attaches a program that passes everything to the peer's end of
// the testbed's veth, for as long as t runs.
func peerXDP(t *testing.T, tb *harness.Testbed) {
	t.Helper()
	prog := harness.PassProgram(t, "peer_pass")
	err := testenv.Do(tb.Peer, func() error {
		ifi, err := net.InterfaceByName(tb.PeerIfc)
		if err != nil {
			return err
		}
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index})
		if err != nil {
			return err
		}
		t.Cleanup(func() { l.Close() })
		return nil
	})
	if err != nil {
		t.Fatalf("XDP on the peer: %v", err)
	}
}

// logged returns the first submatch of re in the log, or fails t.
func (x *xl2tpd) logged(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	m := re.FindStringSubmatch(x.p.Log.String())
	if m == nil {
		t.Fatalf("no %q in the log:\n%s", re, x.p.Log.String())
	}
	return m[1]
}

// l2tpTestbedConfig is l2tpTestbed with a whole configuration.
func l2tpTestbedConfig(t *testing.T, config string) (*harness.Testbed, *xl2tpd) {
	t.Helper()
	return l2tpTestbedFile(t, harness.WriteConfig(t, harness.E2eConfig+config))
}

// control writes one command to xl2tpd's control pipe.
func (x *xl2tpd) control(t *testing.T, cmd string) {
	t.Helper()
	// Opened without blocking: xl2tpd reopens the pipe after each
	// command, and one that died has no reader at all.
	var f *os.File
	var err error
	testenv.Poll(5*time.Second, 10*time.Millisecond, func() bool {
		f, err = os.OpenFile(x.ctl, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		return err == nil || !errors.Is(err, syscall.ENXIO)
	})
	if err != nil {
		t.Fatalf("control pipe: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString(cmd + "\n"); err != nil {
		t.Fatalf("control %q: %v", cmd, err)
	}
}
