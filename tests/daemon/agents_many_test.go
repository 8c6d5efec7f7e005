package daemon

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// manyDNS serves n AAAA records of name (2001:db8::1 and up) on listen in
// the namespace ns, as a real server does: over UDP truncated (TC set),
// whole over TCP. It runs until the test ends.
func manyDNS(t *testing.T, ns, listen, name string, n int) {
	t.Helper()
	var pc net.PacketConn
	var ln net.Listener
	if err := testenv.Do(ns, func() error {
		var err error
		if pc, err = net.ListenPacket("udp", listen); err != nil {
			return err
		}
		ln, err = net.Listen("tcp", listen)
		return err
	}); err != nil {
		t.Fatalf("DNS server in %s: %v", ns, err)
	}
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case q.Name == name && q.Qtype == dns.TypeAAAA && w.LocalAddr().Network() == "udp":
			m.Truncated = true
		case q.Name == name && q.Qtype == dns.TypeAAAA:
			base := netip.MustParseAddr("2001:db8::").As16()
			for i := 1; i <= n; i++ {
				a := base
				a[14], a[15] = byte(i>>8), byte(i)
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 60},
					AAAA: net.IP(a[:])})
			}
		case q.Name == name:
		default:
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: ln, Handler: handler}} {
		go srv.ActivateAndServe()
		t.Cleanup(func() { srv.Shutdown() })
	}
}

// agentAddrs reads the agents table: address to agent index.
func agentAddrs(t *testing.T, tb *harness.Testbed) map[netip.Addr]uint32 {
	t.Helper()
	p, err := loader.OpenShared(tb.State)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := map[netip.Addr]uint32{}
	var k bpf.XdpCacPrefix
	var v uint32
	it := p.Agents.Iterate()
	for it.Next(&k, &v) {
		out[netip.AddrFrom16(k.Addr).Unmap()] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSessionAgentTooManyAddresses: a session agent whose name resolves
// to more addresses than the agents table holds (1,024 in all) keeps the
// first that fit beside the literal agent before it, with a warning; an
// apply afterwards, which carries the resolved addresses over, goes
// through, and the table stays full and whole.
func TestSessionAgentTooManyAddresses(t *testing.T) {
	tb := harness.SipTestbed(t)
	const name, many = "many.example.com.", 1100
	manyDNS(t, tb.Peer, harness.AgentIP+":53", name, many)
	cfgOf := func(burst int) string {
		return lifeConfig(tb, burst, "dns-server: \""+harness.AgentIP+":53\"\nrealms: [{name: core, address: "+harness.BoxIP+"}]\n"+
			"session-agents:\n  - {name: peer1, hostname: "+harness.AgentIP+", realm-id: core, ping-interval: 1m}\n"+
			"  - {name: many, hostname: many.example.com, realm-id: core, ping-interval: 1m, ping-all-addresses: true}\n")
	}
	d := tb.StartDaemon(t, harness.WriteConfig(t, cfgOf(1)))
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "more addresses than the agents table holds") })
	if want := fmt.Sprintf("addresses=%d kept=%d", many, maps.MaxAgentAddrs-1); !strings.Contains(d.Log.String(), want) {
		t.Errorf("the warning does not say %q:\n%s", want, d.Log.String())
	}
	check := func(when string) {
		t.Helper()
		got := agentAddrs(t, tb)
		if len(got) != maps.MaxAgentAddrs || got[netip.MustParseAddr(harness.AgentIP)] != 0 ||
			got[netip.MustParseAddr("2001:db8::1")] != 1 || got[netip.MustParseAddr("2001:db8::3ff")] != 1 {
			t.Errorf("%s the agents table holds %d addresses (peer1 %v, first of many %v, last kept %v); want %d, the literal one first",
				when, len(got), got[netip.MustParseAddr(harness.AgentIP)], got[netip.MustParseAddr("2001:db8::1")],
				got[netip.MustParseAddr("2001:db8::3ff")], maps.MaxAgentAddrs)
		}
	}
	check("after the resolve")

	// An unrelated change: a PADI limit of 5 in place of 1.
	out, stderr, err := tb.Cacctl(t, "apply", "--config", harness.WriteConfig(t, cfgOf(5)))
	if err != nil {
		t.Fatalf("apply beside the agent of too many addresses: %v: %s%s", err, out, stderr)
	}
	for range 2 {
		if got := tb.PadiOutcome(t); got != "admitted" {
			t.Errorf("a PADI after the apply: %s, want admitted under the new limit", got)
		}
	}
	check("after the apply")
}
