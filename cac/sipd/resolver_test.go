package sipd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsZone is a test DNS server on loopback answering from records; any other
// name is NXDOMAIN.
type dnsZone struct {
	addr    string
	queries atomic.Int32
}

func newDNS(t *testing.T, records ...string) *dnsZone {
	t.Helper()
	byQ := map[string][]dns.RR{}
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		k := strings.ToLower(rr.Header().Name) + "/" + dns.TypeToString[rr.Header().Rrtype]
		byQ[k] = append(byQ[k], rr)
		byQ[strings.ToLower(rr.Header().Name)+"/"] = nil // the name exists
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := &dnsZone{addr: pc.LocalAddr().String()}
	started := make(chan struct{})
	srv := &dns.Server{
		PacketConn:        pc,
		NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
			z.queries.Add(1)
			m := new(dns.Msg)
			m.SetReply(req)
			q := req.Question[0]
			name := strings.ToLower(q.Name)
			if _, exists := byQ[name+"/"]; !exists {
				m.SetRcode(req, dns.RcodeNameError)
			}
			m.Answer = byQ[name+"/"+dns.TypeToString[q.Qtype]]
			if err := w.WriteMsg(m); err != nil {
				t.Errorf("dns: write: %v", err)
			}
		}),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("dns server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Error(err)
		}
		<-served
		pc.Close()
	})
	return z
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestResolver(t *testing.T) {
	z := newDNS(t,
		"two.test. 60 IN A 192.0.2.1",
		"two.test. 60 IN A 192.0.2.2",
		"v6.test. 60 IN AAAA 2001:db8::1",
		"v6.test. 60 IN A 192.0.2.9",
		"_sip._udp.srv.test. 60 IN SRV 20 10 5080 b.test.",
		"_sip._udp.srv.test. 60 IN SRV 10 10 5080 a.test.",
		"_sip._udp.srv.test. 60 IN SRV 20 50 5080 c.test.",
		"srv.test. 60 IN A 198.51.100.99", // not used: SRV comes first
		"a.test. 60 IN A 198.51.100.1",
		"b.test. 60 IN A 198.51.100.2",
		"c.test. 60 IN A 198.51.100.3",
		"c.test. 60 IN A 198.51.100.1", // same address as a.test: once
	)
	r := &Resolver{Server: z.addr, Timeout: time.Second}
	ctx := t.Context()

	for _, tc := range []struct {
		name string
		all  bool
		want []netip.AddrPort
	}{
		{"two.test", true, []netip.AddrPort{ap("192.0.2.1:5060"), ap("192.0.2.2:5060")}},
		{"two.test.", false, []netip.AddrPort{ap("192.0.2.1:5060")}},
		{"v6.test", true, []netip.AddrPort{ap("192.0.2.9:5060"), ap("[2001:db8::1]:5060")}},
		// priority 10 first, then weight 50 before 10 at priority 20
		{"srv.test", true, []netip.AddrPort{ap("198.51.100.1:5080"), ap("198.51.100.3:5080"), ap("198.51.100.2:5080")}},
		{"SRV.test", false, []netip.AddrPort{ap("198.51.100.1:5080")}},
	} {
		got, err := r.Resolve(ctx, tc.name, 5060, tc.all)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Resolve(%q, all=%v) = %v, %v; want %v", tc.name, tc.all, got, err, tc.want)
		}
	}

	_, err := r.Resolve(ctx, "nope.test", 5060, true)
	if !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), `"nope.test"`) {
		t.Errorf("missing name: %v", err)
	}
}

func TestResolverIP(t *testing.T) {
	z := newDNS(t)
	for _, r := range []*Resolver{{Server: z.addr}, {Server: "127.0.0.1:1", Timeout: 100 * time.Millisecond}} {
		for host, want := range map[string]netip.AddrPort{
			"192.0.2.7":     ap("192.0.2.7:5070"),
			"2001:db8::7":   ap("[2001:db8::7]:5070"),
			"[2001:db8::8]": ap("[2001:db8::8]:5070"),
		} {
			got, err := r.Resolve(t.Context(), host, 5070, true)
			if err != nil || !slices.Equal(got, []netip.AddrPort{want}) {
				t.Errorf("Resolve(%q) = %v, %v; want %v", host, got, err, want)
			}
		}
	}
	if n := z.queries.Load(); n != 0 {
		t.Errorf("%d DNS queries for IP hostnames", n)
	}
}

func TestResolverErrors(t *testing.T) {
	// Nothing answers: an error naming the host, not an empty list.
	r := &Resolver{Server: "127.0.0.1:1", Timeout: 200 * time.Millisecond}
	if got, err := r.Resolve(t.Context(), "down.test", 5060, true); err == nil || !strings.Contains(err.Error(), `"down.test"`) {
		t.Errorf("unreachable server: %v, %v", got, err)
	}
	if _, err := r.Resolve(t.Context(), "bad name..test", 5060, true); err == nil {
		t.Error("malformed name accepted")
	}
}

// TestResolverDial: every query goes through Dial, the TCP retry of a
// truncated answer too, to the servers ResolvConf names. The servers named
// there are documentation addresses never dialed for real: Dial sends the
// queries to servers on loopback instead.
func TestResolverDial(t *testing.T) {
	udp := newDNSServer(t, "udp", func(m *dns.Msg) { m.Truncated = true }) // too long for UDP
	tcp := newDNSServer(t, "tcp", func(m *dns.Msg) {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: m.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
			A: net.ParseIP("198.51.100.20")})
	})
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 198.51.100.7\nnameserver 198.51.100.8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dialed []string
	r := &Resolver{ResolvConf: conf, Timeout: time.Second, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, network+" "+address)
		mu.Unlock()
		if address != "198.51.100.7:53" {
			return nil, fmt.Errorf("dial %s: not the first server", address)
		}
		to := udp
		if network == "tcp" {
			to = tcp
		}
		return (&net.Dialer{}).DialContext(ctx, network, to)
	}}
	got, err := r.Resolve(t.Context(), "big.test", 5060, true)
	if err != nil || !slices.Equal(got, []netip.AddrPort{ap("198.51.100.20:5060")}) {
		t.Fatalf("Resolve = %v, %v; want 198.51.100.20:5060", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(dialed, "udp 198.51.100.7:53") || !slices.Contains(dialed, "tcp 198.51.100.7:53") {
		t.Errorf("dialed %q, want UDP then TCP to the first server of %s", dialed, conf)
	}

	if _, err := (&Resolver{ResolvConf: filepath.Join(t.TempDir(), "none")}).Resolve(t.Context(), "big.test", 5060, true); err == nil {
		t.Error("a missing resolv.conf gave no error")
	}
}

// newDNSServer answers every query on loopback over network, with fill
// adding to the reply; it returns the server's address.
func newDNSServer(t *testing.T, network string, fill func(*dns.Msg)) string {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		if req.Question[0].Qtype == dns.TypeA {
			fill(m)
		}
		w.WriteMsg(m)
	})
	srv := &dns.Server{Handler: h}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	switch network {
	case "udp":
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv.PacketConn = pc
	default:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener = l
	}
	served := make(chan error, 1)
	go func() { served <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-served:
		t.Fatalf("dns server: %v", err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		<-served
	})
	if srv.PacketConn != nil {
		return srv.PacketConn.LocalAddr().String()
	}
	return srv.Listener.Addr().String()
}

func TestNetnsResolvConf(t *testing.T) {
	old := netnsEtc
	netnsEtc = t.TempDir()
	t.Cleanup(func() { netnsEtc = old })
	if err := os.MkdirAll(filepath.Join(netnsEtc, "with"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(netnsEtc, "without"), 0o755); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(netnsEtc, "with", "resolv.conf")
	if err := os.WriteFile(own, []byte("nameserver 198.51.100.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"with": own, "without": ResolvConf, "absent": ResolvConf, "": ResolvConf} {
		if got := NetnsResolvConf(name); got != want {
			t.Errorf("NetnsResolvConf(%q) = %q, want %q", name, got, want)
		}
	}
}
