package daemon

import (
	"bytes"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/xdpcac/xdpcac/cac/listeners"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// lockedBuffer is a log both the watch and the test use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was logged since the last take.
func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestListenerWatch: the daemon logs every unwatched SIP listener of its
// namespace when a configuration is put in force, a new one once as it
// appears, and exports their count per transport; a reload that watches
// a port takes its UDP listener off. The namespace is the test's own, and
// its addresses documentation ones.
func TestListenerWatch(t *testing.T) {
	testenv.RequireRoot(t, "create a network namespace")
	ns := testenv.Netns(t)
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", "192.0.2.1/32", "dev", "lo"}} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	listen := func(network, addr string) {
		t.Helper()
		err := testenv.Do(ns, func() error {
			var c interface{ Close() error }
			var err error
			if network == "udp" {
				c, err = net.ListenPacket(network, addr)
			} else {
				c, err = net.Listen(network, addr)
			}
			if err == nil {
				t.Cleanup(func() { c.Close() })
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	listen("udp", "192.0.2.1:5060")
	listen("udp", "192.0.2.1:5080")
	listen("tcp", "192.0.2.1:5060")

	var log lockedBuffer
	w := newListenerWatch(ns, slog.New(slog.NewTextHandler(&log, nil)))
	c := newListenerCollector(w.count)
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Errorf("%d series before the first listing, want none", n)
	}
	w.ports = listeners.Watched{UDP: []uint16{5060}}
	w.refresh(true)
	logged := log.take()
	for _, want := range []string{"udp 192.0.2.1:5080 in network namespace " + ns, "tcp 192.0.2.1:5060 in network namespace " + ns} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log does not name %s:\n%s", want, logged)
		}
	}
	if strings.Contains(logged, "udp 192.0.2.1:5060") {
		t.Errorf("the watched listener is named:\n%s", logged)
	}
	gauge := func(want string) {
		t.Helper()
		if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP xdpcac_sip_listeners_unwatched SIP listeners of the filter's network namespace it does not watch: UDP on a SIP port not in ports.sip, TCP on one not in ports.sip-tcp, SCTP on any.
# TYPE xdpcac_sip_listeners_unwatched gauge
`+want)); err != nil {
			t.Error(err)
		}
	}
	gauge("xdpcac_sip_listeners_unwatched{transport=\"sctp\"} 0\nxdpcac_sip_listeners_unwatched{transport=\"tcp\"} 1\nxdpcac_sip_listeners_unwatched{transport=\"udp\"} 1\n")

	// A refresh names only what is new.
	listen("tcp", "192.0.2.1:5061")
	w.refresh(false)
	logged = log.take()
	if !strings.Contains(logged, "tcp 192.0.2.1:5061") || strings.Contains(logged, ":5080") || strings.Contains(logged, "tcp 192.0.2.1:5060") {
		t.Errorf("a refresh after a new listener logged:\n%s", logged)
	}
	gauge("xdpcac_sip_listeners_unwatched{transport=\"sctp\"} 0\nxdpcac_sip_listeners_unwatched{transport=\"tcp\"} 2\nxdpcac_sip_listeners_unwatched{transport=\"udp\"} 1\n")

	// A reload that watches 5080 as well.
	w.ports = listeners.Watched{UDP: []uint16{5060, 5080}}
	w.refresh(true)
	if logged = log.take(); strings.Contains(logged, ":5080") || !strings.Contains(logged, "tcp 192.0.2.1:5061") {
		t.Errorf("after the reload:\n%s", logged)
	}
	gauge("xdpcac_sip_listeners_unwatched{transport=\"sctp\"} 0\nxdpcac_sip_listeners_unwatched{transport=\"tcp\"} 2\nxdpcac_sip_listeners_unwatched{transport=\"udp\"} 0\n")

	// One that admits connections to 5060 (ports.sip-tcp): the TCP
	// listener there is watched, the one on 5061 still is not.
	w.ports = listeners.Watched{UDP: []uint16{5060, 5080}, TCP: []uint16{5060}}
	w.refresh(true)
	if logged = log.take(); strings.Contains(logged, "tcp 192.0.2.1:5060") || !strings.Contains(logged, "tcp 192.0.2.1:5061") {
		t.Errorf("after sip-tcp 5060:\n%s", logged)
	}
	gauge("xdpcac_sip_listeners_unwatched{transport=\"sctp\"} 0\nxdpcac_sip_listeners_unwatched{transport=\"tcp\"} 1\nxdpcac_sip_listeners_unwatched{transport=\"udp\"} 0\n")
}
