package testenv

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Kamailio is a real SIP server, Kamailio, running in a network namespace
// behind the filter. Receiver-differential tests use it as their oracle:
// the filter decides from the first bytes of a frame whether it opens a
// session, but what counts is whether a real SIP stack takes the frame
// for a request. Kamailio logs every request its request_route handles,
// after the kernel has reassembled and checked the datagram and Kamailio
// has parsed it, and answers it statelessly; a test compares those lines
// with what the filter charged.
//
// It runs in the foreground with its log on standard error, with a
// configuration, pid file and runtime directory of its own under
// t.TempDir(), as root, and with DNS off: it looks nothing up, so nothing
// leaves its namespace. It is killed when the test ends.
type Kamailio struct {
	ns    string
	addrs []netip.Addr
	p     *Process // its log, stdout and stderr: -E logs there
}

// KamailioRequest is one request Kamailio handled, as its request_route
// logged it.
type KamailioRequest struct {
	Method string // $rm, as the request line spells it
	Source string // $si, the address it came from
	Dest   string // $Ri, the address it arrived at
	// ToTag is $tt, the To tag as Kamailio reads it (quotes taken off,
	// the last tag parameter winning); "" for none, which xlog writes
	// as <null>, so a tag spelt <null> reads as none.
	ToTag  string
	CallID string // $ci
}

// kamailioMarker starts the line the request_route logs for each request;
// the Call-ID comes last, so that nothing it holds can shift a field.
const kamailioMarker = "xdpcac-request|"

// kamailioReadyPrefix starts the Call-IDs of StartKamailio's own probes,
// which Requests leaves out.
const kamailioReadyPrefix = "kamailio-ready-"

// kamailioConfig is the whole configuration but the listen lines: every
// request is logged, OPTIONS, REGISTER, INVITE and BYE get a 200 (so that
// a sipp caller completes its calls) and every other request but ACK a
// 404, all without transaction state.
const kamailioConfig = `#!KAMAILIO
debug=2
log_stderror=yes
children=2
dns=no
rev_dns=no
dns_try_ipv6=no
dns_try_naptr=no
use_dns_cache=off
auto_aliases=no
disable_tcp=yes
enable_sctp=no
enable_tls=no
mhomed=0
server_signature=no
%s
loadmodule "pv.so"
loadmodule "xlog.so"
loadmodule "sl.so"
loadmodule "textops.so"

request_route {
	xlog("L_ALERT", "` + kamailioMarker + `$rm|$si|$Ri|$tt|$ci\n");
	if (is_method("OPTIONS|REGISTER|INVITE|BYE")) {
		sl_send_reply("200", "OK");
	} else if (!is_method("ACK")) {
		sl_send_reply("404", "Not Here");
	}
	exit;
}
`

// kamailioStartTimeout bounds how long StartKamailio waits for answers
// on every address.
const kamailioStartTimeout = 10 * time.Second

// StartKamailio runs Kamailio (/usr/sbin/kamailio, Debian package
// kamailio) in namespace ns, listening on UDP port 5060 of each address,
// which must be on an interface there. It returns once Kamailio has
// answered an OPTIONS on every address, sent from inside ns so that no
// frame crosses an interface a filter may be attached to. Without
// kamailio it fails when XDPCAC_REQUIRE_BPF=1, else skips.
func StartKamailio(t testing.TB, ns string, addrs ...string) *Kamailio {
	t.Helper()
	return StartKamailioOn(t, ns, []uint16{5060}, addrs...)
}

// StartKamailioOn is StartKamailio listening on each of ports (over UDP)
// of each address; the first port must be 5060, where it is probed.
func StartKamailioOn(t testing.TB, ns string, ports []uint16, addrs ...string) *Kamailio {
	t.Helper()
	k := &Kamailio{ns: ns}
	var listen strings.Builder
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			t.Fatalf("kamailio address %q: %v", a, err)
		}
		k.addrs = append(k.addrs, ip)
		for _, port := range ports {
			fmt.Fprintf(&listen, "listen=udp:%s\n", netip.AddrPortFrom(ip, port))
		}
	}
	k.p = runKamailio(t, ns, "kamailio", fmt.Sprintf(kamailioConfig, listen.String()), 32)
	for _, a := range k.addrs {
		if err := k.ready(a); err != nil {
			t.Fatalf("kamailio in %s: %v", ns, err) // the cleanup shows its log
		}
	}
	return k
}

// ready sends OPTIONS to addr:5060 from addr itself until one is answered
// and logged.
func (k *Kamailio) ready(addr netip.Addr) error {
	return probeOptions(k.ns, k.p, netip.AddrPortFrom(addr, 5060), kamailioReadyPrefix, func(callID string) bool {
		return strings.Contains(k.p.Log.String(), "|"+callID+"\n")
	})
}

// runKamailio writes cfg into a directory of the test's and runs Kamailio
// on it in namespace ns, in the foreground, until the test ends: SIGTERM,
// on which it ends its workers, then SIGKILL to its group 3 s on. pkg MB
// of private memory per process is enough for a test. name says which in
// the log a failed test shows.
func runKamailio(t testing.TB, ns, name, cfg string, pkg int) *Process {
	t.Helper()
	bin := RequireTool(t, "kamailio", "kamailio")
	dir := t.TempDir()
	file := filepath.Join(dir, "kamailio.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// -DD: the creator stays in the foreground (its workers are its
	// children); -E: log to standard error; -m/-M: small memory pools.
	cmd := Command(ns, bin, "-DD", "-E", "-f", file,
		"-P", filepath.Join(dir, "kamailio.pid"), "-Y", dir, "-w", dir, "-m", fmt.Sprint(pkg), "-M", "8")
	cmd.Dir = dir
	p := Start(t, cmd, 3*time.Second)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s in %s, last of its log:\n%s", name, ns, tailLines(p.Log.String(), 100))
		}
	})
	return p
}

// probeOptions sends OPTIONS to dst, from its address, until one is
// answered (and logged, as logged says) or kamailioStartTimeout passes;
// the probes' Call-IDs start with prefix, for the readers of the log to
// leave them out.
func probeOptions(ns string, p *Process, dst netip.AddrPort, prefix string, logged func(callID string) bool) error {
	return Do(ns, func() error {
		conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst.Addr(), 0)))
		if err != nil {
			return fmt.Errorf("probe socket on %s: %w", dst.Addr(), err)
		}
		defer conn.Close()
		local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
		to := net.UDPAddrFromAddrPort(dst)
		buf := make([]byte, 65535)
		var failed error // why it stopped trying, if not for an answer
		try := 0
		// Each try waits 200 ms for its answer: no pause between them.
		answered := Poll(kamailioStartTimeout, 0, func() bool {
			select {
			case <-p.Done():
				failed = errors.New("exited at start")
				return true
			default:
			}
			callID := fmt.Sprintf("%s%d", prefix, try)
			req := strings.Join([]string{
				"OPTIONS sip:" + dst.String() + " SIP/2.0",
				fmt.Sprintf("Via: SIP/2.0/UDP %s;branch=z9hG4bK-ready-%d", local, try),
				"From: <sip:ready@" + local.Addr().String() + ">;tag=ready",
				"To: <sip:" + dst.String() + ">",
				"Call-ID: " + callID,
				"CSeq: 1 OPTIONS",
				"Max-Forwards: 70",
				"Content-Length: 0",
				"", ""}, "\r\n")
			try++
			if _, err := conn.WriteToUDP([]byte(req), to); err != nil {
				failed = fmt.Errorf("probe %s: %w", dst, err)
				return true
			}
			conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			n, _, err := conn.ReadFromUDP(buf)
			return err == nil && strings.Contains(string(buf[:n]), callID) && (logged == nil || logged(callID))
		})
		switch {
		case failed != nil:
			return failed
		case !answered:
			return fmt.Errorf("no answer on %s after %v", dst, kamailioStartTimeout)
		}
		return nil
	})
}

// Requests returns every request Kamailio has logged, in the order it
// logged them, less StartKamailio's probes.
func (k *Kamailio) Requests() []KamailioRequest {
	reqs, _ := k.RequestsSince(0)
	return reqs
}

// RequestsSince is Requests from byte off of the log on, whole lines
// only, and the offset to read from next: a test that reads the log after
// every batch of many reads each line once, rather than the whole log
// each time.
func (k *Kamailio) RequestsSince(off int) ([]KamailioRequest, int) {
	s := k.p.Log.since(off)
	s = s[:strings.LastIndexByte(s, '\n')+1] // a line still being written waits
	var reqs []KamailioRequest
	for _, line := range strings.Split(s, "\n") {
		// The last marker: a method with a NUL in it ends xlog's line
		// there (fprintf's %.*s stops at a NUL), newline and all, so the
		// next line, of any worker, goes on after it.
		i := strings.LastIndex(line, kamailioMarker)
		if i < 0 {
			continue
		}
		// $rm|$si|$Ri|$tt|$ci: the Call-ID last, whatever it holds.
		f := strings.SplitN(line[i+len(kamailioMarker):], "|", 5)
		if len(f) != 5 || strings.HasPrefix(f[4], kamailioReadyPrefix) {
			continue
		}
		if _, err := netip.ParseAddr(f[1]); err != nil {
			continue // not a line of ours: a cut line and another's
		}
		if f[3] == "<null>" {
			f[3] = ""
		}
		reqs = append(reqs, KamailioRequest{Method: f[0], Source: f[1], Dest: f[2], ToTag: f[3], CallID: f[4]})
	}
	return reqs, off + len(s)
}

// since is what b holds from byte off on.
func (b *SyncBuffer) since(off int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.buf.Bytes()
	return string(all[min(off, len(all)):])
}

// Count is how many of Requests have a Call-ID that starts with prefix.
func (k *Kamailio) Count(prefix string) int {
	n := 0
	for _, r := range k.Requests() {
		if strings.HasPrefix(r.CallID, prefix) {
			n++
		}
	}
	return n
}

// Log returns everything Kamailio wrote.
func (k *Kamailio) Log() string { return k.p.Log.String() }

// Stop ends Kamailio: SIGTERM, on which it ends its workers, then SIGKILL
// to the group after 3 s, for any worker left. It waits for the exit and
// may be called again.
func (k *Kamailio) Stop() { k.p.Stop() }

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
