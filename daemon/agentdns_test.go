package daemon

import (
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// dnsIP is the test DNS server's address, on the loopback of one test
// namespace only: nothing in the root namespace has it.
const dnsIP = "198.51.100.53"

// TestAgentResolverNetns: the daemon's resolver under --netns NAME looks
// names up inside NAME, through /etc/netns/NAME/resolv.conf or dns-server.
// The server lives in NAME alone and sees the queries come from in there;
// the same resolver for a namespace without the server reaches nothing.
// Before any query the test checks that the resolver's sockets are made
// inside the namespace, so that a broken one fails here rather than send
// queries out of the machine.
func TestAgentResolverNetns(t *testing.T) {
	testenv.RequireRoot(t, "create network namespaces and files under /etc/netns")
	ns, bare := testenv.Netns(t), testenv.Netns(t)
	for _, n := range []string{ns, bare} {
		testenv.NetnsFile(t, n, "resolv.conf", "nameserver "+dnsIP+"\n")
	}
	testenv.Addr(t, ns, "lo", dnsIP+"/32")
	srv := startNetnsDNS(t, ns, "peer.example.test.", "198.51.100.10")

	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().String() == dnsIP {
			t.Fatalf("the root namespace has %s: the test would not show where queries go", dnsIP)
		}
	}

	want := []netip.AddrPort{netip.MustParseAddrPort("198.51.100.10:5060")}
	for _, server := range []string{"", dnsIP + ":53"} {
		r := agentResolver(server, ns)
		if server == "" && r.ResolvConf != filepath.Join("/etc/netns", ns, "resolv.conf") {
			t.Fatalf("resolv.conf %q, want the namespace's", r.ResolvConf)
		}
		requireDialIn(t, r, true)
		before := srv.count()
		got, err := r.Resolve(t.Context(), "peer.example.test", 5060, true)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("dns-server %q: Resolve = %v, %v; want %v", server, got, err, want)
		}
		if srv.count() == before {
			t.Errorf("dns-server %q: the server in the namespace saw no query", server)
		}
	}
	if src := srv.sources(); !slices.Equal(src, []string{dnsIP}) {
		t.Errorf("queries came from %v, want %s alone, an address of the namespace", src, dnsIP)
	}

	before := srv.count()
	for _, server := range []string{"", dnsIP + ":53"} {
		r := agentResolver(server, bare)
		requireDialIn(t, r, false)
		if got, err := r.Resolve(t.Context(), "peer.example.test", 5060, true); err == nil {
			t.Errorf("dns-server %q in a namespace without the server: %v, want an error", server, got)
		}
	}
	if n := srv.count(); n != before {
		t.Errorf("%d queries reached the server from a namespace that has no route to it", n-before)
	}
}

// requireDialIn fails t unless r's Dial makes its sockets in the test
// namespaces: a connected UDP socket there has dnsIP as its source when the
// server's namespace holds it (reachable), and no route at all in the bare
// one. Connecting UDP sends nothing.
func requireDialIn(t *testing.T, r *sipd.Resolver, reachable bool) {
	t.Helper()
	if r.Dial == nil {
		t.Fatal("the resolver dials from the daemon's own namespace")
	}
	c, err := r.Dial(t.Context(), "udp", dnsIP+":53")
	if !reachable {
		if err == nil {
			c.Close()
			t.Fatalf("dial from a namespace without routes succeeded, from %v", c.LocalAddr())
		}
		return
	}
	if err != nil {
		t.Fatalf("dial in the server's namespace: %v", err)
	}
	defer c.Close()
	if src, _, _ := net.SplitHostPort(c.LocalAddr().String()); src != dnsIP {
		t.Fatalf("socket bound to %v, want %s: made outside the namespace", c.LocalAddr(), dnsIP)
	}
}

// netnsDNS is a DNS server inside one namespace that keeps who asked.
type netnsDNS struct {
	mu  sync.Mutex
	src map[string]int
}

func (s *netnsDNS) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.src {
		n += c
	}
	return n
}

func (s *netnsDNS) sources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for a := range s.src {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// startNetnsDNS serves name's A record on dnsIP:53 in ns until t ends.
func startNetnsDNS(t *testing.T, ns, name, addr string) *netnsDNS {
	t.Helper()
	var pc net.PacketConn
	if err := testenv.Do(ns, func() error {
		var err error
		pc, err = net.ListenPacket("udp", dnsIP+":53")
		return err
	}); err != nil {
		t.Fatalf("DNS server in %s: %v", ns, err)
	}
	s := &netnsDNS{src: map[string]int{}}
	started, served := make(chan struct{}), make(chan error, 1)
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
			host, _, _ := net.SplitHostPort(w.RemoteAddr().String())
			s.mu.Lock()
			s.src[host]++
			s.mu.Unlock()
			m := new(dns.Msg)
			m.SetReply(req)
			switch q := req.Question[0]; {
			case q.Name == name && q.Qtype == dns.TypeA:
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
					A: net.ParseIP(addr)})
			case q.Name != name:
				m.Rcode = dns.RcodeNameError
			}
			w.WriteMsg(m)
		})}
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("DNS server in %s: %v", ns, err)
	case <-time.After(5 * time.Second):
		t.Fatalf("DNS server in %s did not start", ns)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		<-served
	})
	return s
}
