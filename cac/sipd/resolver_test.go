package sipd

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
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
