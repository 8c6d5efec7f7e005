package peers

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/internal/storm"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// The SYN flood's numbers: its spoofed sources, each in a /64 of its
// own under synFloodNet (the per-source buckets' key), and its rate.
const (
	synPort        = 5061
	synSources     = 1000
	synFloodRate   = 1000 // SYNs a second: one a second from each source
	synAgentConns  = 10
	synFloodNet    = "2001:db8:100::/40"
	synConnectBase = "ports: {l2tp: [1701], sip: [5060], sip-tcp: [%s]}\nmalformed: pass\n" +
		"realms: [{name: core, address: " + kamBoxV4 + "}]\n" +
		"session-agents: [{name: pbx, hostname: " + kamPeerV4 + ", realm-id: core}]\n"
	// synConnectClasses hold strangers' SYNs to 50 a second with a burst
	// of 100, of which the agent's reserve is a tenth, and each source to
	// one a second.
	synConnectClasses = "classes:\n  sip-connect: {cps: 50, burst: 100, per-source: {cps: 1, burst: 1}}\n"
)

// synSource is the source of the flood's SYN i: spoofed source i%1000,
// 2001:db8:1XX:YY::1, from a port of its own for each round, so that
// every SYN asks for a new connection.
func synSource(i int) netip.AddrPort {
	n := i % synSources
	a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0x01, byte(n >> 16), byte(n >> 8), byte(n), 15: 1}
	return netip.AddrPortFrom(netip.AddrFrom16(a), uint16(1024+(i/synSources)%60000))
}

// TestSIPConnectSynFlood: 1,000 spoofed IPv6 sources flood SYNs to port
// 5061 of the box, where a plain Go listener stands for the SIP server's
// TLS port (Kamailio's TLS listener would want certificates, and what is
// judged here is the SYN, not what the stream carries), while a session
// agent opens 10 real connections to it over IPv4.
//
// With sip-connect limits (class and per-source) the agent's 10 are all
// established, each on its first SYN (the kernel retransmitted none: the
// filter refused none, with the class bucket held down to the agent's
// reserve by the flood), and the listener answered no more of the
// strangers' SYNs than the filter admitted. Without the feature
// (ports.sip-tcp empty) the listener answers every one of the 1,000
// spoofed sources, counted as SYN-ACKs on the sender's side: the flood
// was real and reached the listener.
func TestSIPConnectSynFlood(t *testing.T) {
	t.Run("limited", func(t *testing.T) {
		b := newSynBed(t, fmt.Sprint(synPort), synConnectClasses)
		stop := b.flood(t)
		// The flood has taken the class bucket down to the reserve once
		// the class refuses strangers, and every source has sent twice
		// once the filter has seen 2,000 of their SYNs.
		if !testenv.Poll(time.Minute, 50*time.Millisecond, func() bool {
			c := b.Stats(t).Classes["sip-connect"]
			return c.Reasons["class"] > 0 && c.Seen >= 2*synSources
		}) {
			t.Fatal("the flood never met sip-connect's class limit within a minute: the test would show nothing")
		}
		b.agentConnects(t)
		sent := stop()
		c := b.Stats(t).Classes["sip-connect"]
		_, answered := b.synacks.Counts()
		strangers := spoofedAnswered(answered)
		t.Logf("%s; sip-connect: seen %d, admitted %d, refused %v; the listener answered %d of the strangers' SYNs",
			sent, c.Seen, c.Admitted, c.Reasons, strangers)
		if agent := rejectsWhere(t, b.Testbed, func(l api.RejectLine) bool { return l.Source == kamPeerV4 }); len(agent) > 0 {
			t.Errorf("the filter refused the agent's SYNs: %v", agent)
		}
		if c.Reasons["class"] == 0 || c.Admitted <= synAgentConns || strangers == 0 {
			t.Errorf("sip-connect admitted %d and refused %v, the listener answered %d strangers: want the flood held to the class, not stopped",
				c.Admitted, c.Reasons, strangers)
		}
		if uint64(strangers) > c.Admitted-synAgentConns {
			t.Errorf("the listener answered %d of the strangers' SYNs, the filter admitted %d of theirs", strangers, c.Admitted-synAgentConns)
		}
	})
	t.Run("unwatched", func(t *testing.T) {
		b := newSynBed(t, "", "")
		stop := b.flood(t)
		all := testenv.Poll(time.Minute, 50*time.Millisecond, func() bool {
			_, answered := b.synacks.Counts()
			return spoofedSources(answered) == synSources
		})
		b.agentConnects(t)
		sent := stop()
		total, answered := b.synacks.Counts()
		c := b.Stats(t).Classes["sip-connect"]
		t.Logf("%s; the listener sent %d SYN-ACKs, to %d spoofed sources (%d source ports); sip-connect seen %d",
			sent, total, spoofedSources(answered), spoofedAnswered(answered), c.Seen)
		if !all {
			t.Errorf("the listener answered %d of the %d spoofed sources within a minute: the flood did not reach it", spoofedSources(answered), synSources)
		}
		if c.Seen != 0 {
			t.Errorf("with ports.sip-tcp empty the filter saw %d sip-connect SYNs", c.Seen)
		}
	})
}

// synBed is the testbed with a TCP listener on port 5061 of the box's
// addresses, a route back to the spoofed sources through the peer (so that
// the box's SYN-ACKs reach the peer's veth, where they are counted), and
// the filter attached with ports.sip-tcp sipTCP and classes.
type synBed struct {
	*harness.Testbed
	boxMAC, peerMAC [6]byte
	synacks         *harness.SYNACKs
	mu              sync.Mutex
	accepted        map[netip.Addr]int // connections the listener accepted, by source
}

func newSynBed(t *testing.T, sipTCP, classes string) *synBed {
	tb := harness.NewTestbed(t)
	testenv.Addr(t, tb.Box, tb.BoxIface, kamBoxV4+"/24")
	testenv.Addr(t, tb.Box, tb.BoxIface, kamBoxV6+"/64")
	testenv.Addr(t, tb.Peer, tb.PeerIfc, kamPeerV4+"/24")
	testenv.Addr(t, tb.Peer, tb.PeerIfc, kamPeerV6+"/64")
	testenv.Run(t, tb.Box, "ip", "-6", "route", "add", synFloodNet, "via", kamPeerV6)
	b := &synBed{Testbed: tb, accepted: map[netip.Addr]int{},
		boxMAC:  testenv.HardwareAddr(t, tb.Box, tb.BoxIface),
		peerMAC: testenv.HardwareAddr(t, tb.Peer, tb.PeerIfc)}
	b.listen(t)
	cfg := harness.WriteConfig(t, fmt.Sprintf(synConnectBase, sipTCP)+classes)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	b.synacks = harness.CaptureSYNACKs(t, tb.Peer, tb.PeerIfc, synPort)
	return b
}

// listen accepts connections on port 5061 of every address of the box
// and holds them open until the test ends.
func (b *synBed) listen(t *testing.T) {
	var l net.Listener
	if err := testenv.Do(b.Box, func() error {
		var err error
		l, err = net.Listen("tcp", fmt.Sprintf("[::]:%d", synPort))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", b.Box, err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			b.mu.Lock()
			b.accepted[c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()]++
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
}

// flood sends the spoofed SYNs to the box's IPv6 address until the
// returned stop is called, which reports what was sent.
func (b *synBed) flood(t *testing.T) (stop func() storm.Report) {
	ctx, cancel := context.WithCancel(context.Background())
	eth := pkt.Ether{Src: b.peerMAC, Dst: b.boxMAC}
	dst := netip.AddrPortFrom(netip.MustParseAddr(kamBoxV6), synPort)
	type result struct {
		r   storm.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		g := storm.Generator{Name: "spoofed SYNs", Rate: synFloodRate, Duration: 2 * time.Minute,
			Frame: func(i int) []byte { return harness.SYN(eth, synSource(i), dst) }}
		r, err := g.Run(ctx, b.Peer, b.PeerIfc)
		done <- result{r, err}
	}()
	var once sync.Once
	var rep storm.Report
	stop = func() storm.Report {
		once.Do(func() {
			cancel()
			res := <-done
			if res.err != nil {
				t.Errorf("flood: %v", res.err)
			}
			rep = res.r
		})
		return rep
	}
	t.Cleanup(func() { stop() })
	return stop
}

// agentConnects opens the agent's 10 connections to port 5061 over IPv4,
// one after another, and requires each established and accepted, on its
// first SYN: the kernel retransmitted nothing of it.
func (b *synBed) agentConnects(t *testing.T) {
	t.Helper()
	to := netip.AddrPortFrom(netip.MustParseAddr(kamBoxV4), synPort).String()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	established, firstSYN := 0, 0
	for i := range synAgentConns {
		var c net.Conn
		err := testenv.Do(b.Peer, func() error {
			d := net.Dialer{Timeout: 20 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(kamPeerV4)}}
			var err error
			c, err = d.Dial("tcp", to)
			return err
		})
		if err != nil {
			t.Errorf("the agent's connection %d: %v", i, err)
			continue
		}
		conns = append(conns, c)
		established++
		if retrans, err := totalRetrans(c); err != nil {
			t.Fatal(err)
		} else if retrans == 0 {
			firstSYN++
		}
	}
	agent := netip.MustParseAddr(kamPeerV4)
	accepted := testenv.Poll(5*time.Second, 20*time.Millisecond, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.accepted[agent] == synAgentConns
	})
	t.Logf("the agent's connections: %d of %d established, %d on their first SYN", established, synAgentConns, firstSYN)
	if established != synAgentConns || firstSYN != synAgentConns || !accepted {
		b.mu.Lock()
		t.Errorf("the agent established %d of %d connections, %d on their first SYN; the listener accepted %d of them",
			established, synAgentConns, firstSYN, b.accepted[agent])
		b.mu.Unlock()
	}
}

// totalRetrans is how many segments the kernel sent again on c, its SYN
// included.
func totalRetrans(c net.Conn) (uint32, error) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return 0, err
	}
	if ierr != nil {
		return 0, fmt.Errorf("TCP_INFO: %w", ierr)
	}
	return info.Total_retrans, nil
}

// spoofedAnswered is how many of the flood's SYNs (source and port) were
// answered; spoofedSources, how many of its sources.
func spoofedAnswered(answered map[netip.AddrPort]bool) int {
	n := 0
	flood := netip.MustParsePrefix(synFloodNet)
	for a := range answered {
		if flood.Contains(a.Addr()) {
			n++
		}
	}
	return n
}

func spoofedSources(answered map[netip.AddrPort]bool) int {
	flood := netip.MustParsePrefix(synFloodNet)
	seen := map[netip.Addr]bool{}
	for a := range answered {
		if flood.Contains(a.Addr()) {
			seen[a.Addr()] = true
		}
	}
	return len(seen)
}
