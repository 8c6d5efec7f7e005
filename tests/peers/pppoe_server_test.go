package peers

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// pppoeServer starts pppoe-server on the testbed's box, waits for its
// discovery socket and stops it, and every pppd it started, when t ends.
func pppoeServer(t *testing.T, tb *harness.Testbed) {
	t.Helper()
	testenv.RequireTool(t, "pppoe-server", "pppoe")
	// Cleanups run last first: the server is killed, then the pppd of
	// each session.
	t.Cleanup(func() { testenv.KillNetnsProcesses(tb.Box) })
	server := testenv.Start(t, testenv.Command(tb.Box, "pppoe-server", "-F", "-I", tb.BoxIface, "-C", "xdpcac-test",
		"-L", "192.0.2.1", "-R", "192.0.2.10", "-N", "64"), 0)
	testenv.WaitFor(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/packet", server.Pid()))
		return err == nil && strings.Contains(string(b), " 8863 ")
	})
}

// TestPADIWithSessionID: RFC 2516 gives a PADI session ID 0, but
// pppoe-server answers one with any. Ten such PADIs under pppoe-padi
// {cps: 1, burst: 1} get at most one PADO: they are held as PADIs, and
// counted as odd forms.
func TestPADIWithSessionID(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {cps: 1, burst: 1}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	pppoeServer(t, tb)

	mac := testenv.HardwareAddr(t, tb.Peer, tb.PeerIfc)
	var padis [][]byte
	for i := 1; i <= 10; i++ {
		padis = append(padis, Frame(Ether{Src: mac, Broadcast: true}, PPPoE{Code: PADI, Session: uint16(i)}))
	}
	pados := countPADOs(t, tb, padis)
	st := tb.Stats(t)
	if pados > 1 {
		t.Errorf("%d of 10 PADIs with a session ID got a PADO under burst 1; want at most 1", pados)
	}
	padi := st.Classes["pppoe-padi"]
	if padi.Seen != 10 || padi.Reasons["class"] < 9 || st.PPPoEOddForms != 10 {
		t.Errorf("pppoe-padi %+v, odd forms %d: want 10 seen, at least 9 rejected by class, 10 odd", padi, st.PPPoEOddForms)
	}
	t.Logf("%d PADO for 10 PADIs with a session ID; pppoe-padi %+v", pados, padi)
}

// countPADOs sends frames from the testbed's peer and counts the PADOs
// that come back within a second of the last.
func countPADOs(t *testing.T, tb *harness.Testbed, frames [][]byte) int {
	t.Helper()
	var n int
	err := testenv.Do(tb.Peer, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(0x8863)))
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		ifi, err := testenv.InterfaceIndex(tb.PeerIfc)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(0x8863), Ifindex: ifi}); err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		addr := &unix.SockaddrLinklayer{Ifindex: ifi, Halen: 6}
		for i, f := range frames {
			if err := unix.Sendto(fd, f, 0, addr); err != nil {
				return fmt.Errorf("send frame %d: %w", i, err)
			}
		}
		tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		buf := make([]byte, 2048)
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			k, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // the timeout: look at the clock again
			}
			// Ethernet, then ver/type 0x11 and code PADO (0x07).
			if k >= 16 && buf[12] == 0x88 && buf[13] == 0x63 && buf[15] == 0x07 {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// TestPPPoEClientsChargedOnce: with `call admission pppoe 10 1` and
// `limit 100`, ten real clients started together all reach PADS. The
// charge lands on the PADI alone: ten PADIs fill the budget, and the
// PADRs that follow are not refused for it (as they were when a PADR
// was charged again).
func TestPPPoEClientsChargedOnce(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"call-admission: |\n  call admission limit 100\n  call admission pppoe 10 1\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	pppoeServer(t, tb)
	testenv.RequireTool(t, "pppoe", "pppoe")

	var wg sync.WaitGroup
	outs := make([]string, 10)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := testenv.Command(tb.Peer, "timeout", "20",
				"pppoe", "-I", tb.PeerIfc, "-d", "-U", "-t", "3").CombinedOutput()
			outs[i] = fmt.Sprintf("%s (%v)", strings.TrimSpace(string(out)), err)
		}()
	}
	wg.Wait()
	sessions := 0
	for _, out := range outs {
		// pppoe -d prints SESSION-ID:MAC once the PADS came.
		if strings.Count(out, ":") >= 6 && !strings.Contains(out, "Timeout") {
			sessions++
		} else {
			t.Logf("client: %s", out)
		}
	}
	st := tb.Stats(t)
	if sessions != 10 {
		t.Errorf("%d of 10 clients reached PADS; pppoe-padi %+v, pppoe-padr %+v", sessions,
			st.Classes["pppoe-padi"], st.Classes["pppoe-padr"])
	}
	t.Logf("pppoe-padi %+v, pppoe-padr %+v", st.Classes["pppoe-padi"], st.Classes["pppoe-padr"])
	if padr := st.Classes["pppoe-padr"]; padr.Rejected != 0 {
		t.Errorf("PADRs refused: %+v", padr)
	}
}
