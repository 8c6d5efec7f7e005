package daemon

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/xdpcac/xdpcac/cac/agents"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// agentConfig is a daemon's file with one realm on the box and one agent,
// pinged every second with a short T1, so that silence counts in 3.2 s;
// agentKeys go into the agent's mapping.
func agentConfig(tb *harness.Testbed, agentKeys, extra string) string {
	return harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\n" +
		"cpu: {sample-interval: 200ms}\nsip-t1: 50ms\n" +
		"realms: [{name: core, address: " + harness.BoxIP + "}]\n" +
		"session-agents:\n  - {name: peer1, hostname: " + harness.AgentIP + ", realm-id: core, ping-interval: 1s" +
		agentKeys + "}\n" + extra
}

// TestSessionAgentStatus: a real SIP peer (sipp) answers the daemon's
// OPTIONS with 200, then 503 with Retry-After, then 404 while the agent
// keeps only 200 in service, then nothing, then 200 again; the status
// follows each step within the interval times the failure count.
func TestSessionAgentStatus(t *testing.T) {
	tb := harness.SipTestbed(t)
	uas := func(scenario string) *testenv.Sipp {
		return testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, scenario), "-i", harness.AgentIP, "-p", "5060", "-t", "u1")
	}
	cfgPath := harness.WriteConfig(t, agentConfig(tb, ", ping-send-mode: continuous, out-service-response-codes: [503], options: [ping-failure-count=2]", ""))
	peer := uas("options-503")
	d := tb.StartDaemon(t, cfgPath)
	took := tb.WaitStatus(t, harness.AgentIP, false, 3*time.Second)
	t.Logf("503 with Retry-After: out of service in %v", took)
	// Any request from the agent brings it back; the next ping's 503 takes
	// it out again. That ping may follow within a millisecond (its interval
	// is long over), too soon to see the target in service from here: the
	// daemon's log says it.
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{Frame(Ether{}, IPv4{Src: netip.MustParseAddr(harness.AgentIP), Dst: netip.MustParseAddr(harness.BoxIP)},
		UDP{Src: 5060, Dst: 5060}, Raw("BYE sip:b@"+harness.BoxIP+" SIP/2.0\r\nVia: SIP/2.0/UDP "+harness.AgentIP+";branch=z9hG4bK9\r\nCSeq: 2 BYE\r\n\r\n"))})
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), `in_service=true reason="request from agent"`) })
	tb.WaitStatus(t, harness.AgentIP, false, 3*time.Second)
	// A restarted daemon starts from the statuses it kept, not from "in
	// service" for every agent, and the request stamped before it started
	// does not count again: with the peer silent, either mistake would
	// show it in service for a whole ping timeout.
	peer.Stop()
	d.Signal(syscall.SIGTERM)
	d.Wait()
	tb.StartDaemon(t, cfgPath)
	if rows := tb.AgentTargets(t); len(rows) != 1 || rows[0].Status.InService {
		t.Errorf("after a restart: %+v, want the target still out of service", rows)
	}
	out, _, _ := tb.Cacctl(t, "show", "sipd", "agents", "peer1")
	if !strings.Contains(out, "Session Agent peer1 [Out of Service]") || !strings.Contains(out, "Destination: "+harness.AgentIP+"  Source : core  Out of Service") {
		t.Errorf("show sipd agents peer1:\n%s", out)
	}
	peer = uas("options-200")
	took = tb.WaitStatus(t, harness.AgentIP, true, 8*time.Second) // Retry-After 2 s, a timed-out ping, then the next
	t.Logf("200: in service again in %v", took)

	// Only 200 keeps it in service now: two 404s take it out.
	writeFile(t, cfgPath, agentConfig(tb, ", ping-send-mode: continuous, out-service-response-codes: [503], ping-in-service-response-codes: [200], options: [ping-failure-count=2]", ""))
	if _, stderr, err := tb.Cacctl(t, "apply", "--config", cfgPath); err != nil {
		t.Fatalf("apply: %v: %s", err, stderr)
	}
	peer.Stop()
	peer = uas("options-404")
	took = tb.WaitStatus(t, harness.AgentIP, false, 4*time.Second)
	t.Logf("404 not in the in-service list, twice: out of service in %v", took)

	peer.Stop() // silence: stays out
	// A ping that went unanswered (its last code 0; the 404s left 404) is
	// the silence seen: the target must still be out of service after it.
	var rows []agents.Row
	if !testenv.Poll(time.Minute, 50*time.Millisecond, func() bool {
		rows = tb.AgentTargets(t)
		return len(rows) == 1 && rows[0].Status.LastCode == 0
	}) {
		t.Fatalf("silence: no ping timed out within a minute: %+v", rows)
	}
	if rows[0].Status.InService {
		t.Errorf("silence: %+v", rows)
	}
	peer = uas("options-200")
	took = tb.WaitStatus(t, harness.AgentIP, true, 6*time.Second) // a timed-out ping may be in flight
	t.Logf("200 after silence: in service in %v", took)
	peer.Stop()
	tb.WaitStatus(t, harness.AgentIP, false, 10*time.Second) // two pings of 3.2 s each go unanswered
}

// TestSessionAgentProtected: a flood of INVITEs from a stranger is held by
// its per-source bucket and does not touch the agent, whose INVITEs and
// OPTIONS pass; a refused INVITE from sipp gets a 503 and sipp stops.
func TestSessionAgentProtected(t *testing.T) {
	tb := harness.SipTestbed(t)
	uas := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "options-200"), "-i", harness.AgentIP, "-p", "5060", "-t", "u1")
	defer uas.Stop()
	tb.StartDaemon(t, harness.WriteConfig(t, agentConfig(tb, ", ping-send-mode: continuous, cps: 1000",
		"classes:\n  sip-invite: {action: reject, per-source: {cps: 0.001, burst: 2}}\n  sip-options: {per-source: {cps: 0.001, burst: 2}}\n")))
	tb.WaitStatus(t, harness.AgentIP, true, 3*time.Second)
	// show limits names the agent as the file in force does.
	if out, stderr, err := tb.Cacctl(t, "show", "limits"); err != nil || !strings.Contains(out, "session agent peer1: 1000/s") {
		t.Errorf("show limits does not name the agent: %v: %s%s", err, out, stderr)
	}

	// Each request a call of its own: none is a retransmission.
	from := func(src string, method string, n int) []byte {
		return Frame(Ether{}, IPv4{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(harness.BoxIP)}, UDP{Src: 5060, Dst: 5060},
			SIPRequest(method, harness.ToNoTag).With("Call-ID", harness.CallID(n)))
	}
	var flood [][]byte
	for i := 0; i < 200; i++ {
		flood = append(flood, from(harness.StrangerIP, "INVITE", i))
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, flood)
	var mine [][]byte
	for i := 0; i < 20; i++ {
		mine = append(mine, from(harness.AgentIP, "INVITE", 1000+i), from(harness.AgentIP, "OPTIONS", 2000+i))
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, mine)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["sip-invite"].Seen == 220 })
	s := tb.Stats(t)
	inv, opt := s.Classes["sip-invite"], s.Classes["sip-options"]
	if inv.Admitted != 22 || inv.Reasons["source"] != 198 {
		t.Errorf("INVITEs: %+v; want the agent's 20 and the stranger's 2 admitted, 198 rejected by source", inv)
	}
	if opt.Admitted != 20 || opt.Rejected != 0 {
		t.Errorf("the agent's OPTIONS: %+v; want all 20 admitted", opt)
	}

	// The stranger's bucket is empty: sipp's INVITE is refused and
	// answered with 503, which ends sipp's call (it would retransmit for
	// 32 s otherwise).
	uac := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "invite-uac"), "-i", harness.StrangerIP, "-p", "5062", "-t", "u1", "-m", "1", harness.BoxIP+":5060")
	if err := uac.Wait(10 * time.Second); err != nil {
		t.Errorf("sipp as UAC did not get its 503: %v\n%s", err, uac.Log())
	}
	var v struct {
		Answered uint64 `json:"answered_503"`
	}
	out, _, _ := tb.Cacctl(t, "show", "sipd", "agents", "-o", "json")
	if json.Unmarshal([]byte(out), &v) != nil || v.Answered == 0 {
		t.Errorf("no 503 counted as answered: %s", out)
	}
}

// TestSessionAgentBadInput: malformed responses, responses from strangers
// and a flood of fake out-of-service responses never change a status.
func TestSessionAgentBadInput(t *testing.T) {
	tb := harness.SipTestbed(t)
	uas := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "options-200"), "-i", harness.AgentIP, "-p", "5060", "-t", "u1")
	defer uas.Stop()
	tb.StartDaemon(t, harness.WriteConfig(t, agentConfig(tb, ", out-service-response-codes: [503], ping-send-mode: keep-alive", "")))
	tb.WaitStatus(t, harness.AgentIP, true, 3*time.Second)
	response := func(src, status, cseq string) []byte {
		return Frame(Ether{}, IPv4{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(harness.BoxIP)}, UDP{Src: 5060, Dst: 5060},
			Raw(fmt.Sprintf("SIP/2.0 %s\r\nVia: SIP/2.0/UDP %s;branch=z9hG4bK1\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@x>;tag=2\r\nCall-ID: c\r\nCSeq: %s\r\nRetry-After: 60\r\nContent-Length: 0\r\n\r\n", status, harness.BoxIP, cseq)))
	}
	var bad [][]byte
	for i := 0; i < 100; i++ {
		bad = append(bad, response(harness.StrangerIP, "503 Service Unavailable", "1 INVITE")) // not the agent
	}
	toElsewhere := response(harness.AgentIP, "503 Service Unavailable", "1 INVITE")
	toElsewhere = Frame(Ether{}, IPv4{Src: netip.MustParseAddr(harness.AgentIP), Dst: netip.MustParseAddr(harness.BoxIP)}, UDP{Src: 5060, Dst: 5080},
		Raw(toElsewhere[42:])) // to a SIP port that is no realm's
	bad = append(bad,
		response(harness.AgentIP, "503 Service Unavailable", "1 OPTIONS"),        // not a dialog-creating request
		response(harness.AgentIP, "503 Service Unavailable", "1 INVITE garbage"), // malformed CSeq
		toElsewhere,
		Frame(Ether{}, IPv4{Src: netip.MustParseAddr(harness.AgentIP)}, UDP{Dst: 5060}, Raw("SIP/2.0 503\r\n")), // truncated
	)
	testenv.Send(t, tb.Peer, tb.PeerIfc, bad)
	// The three from the agent's address with code 503 reach the daemon;
	// wait until it has read them before looking.
	testenv.WaitFor(t, func() bool {
		out, _, _ := tb.Cacctl(t, "show", "sipd", "agents", "-o", "json")
		var v struct {
			Responses uint64 `json:"agent_responses"`
		}
		return json.Unmarshal([]byte(out), &v) == nil && v.Responses >= 3
	})
	if rows := tb.AgentTargets(t); len(rows) != 1 || !rows[0].Status.InService {
		t.Errorf("after bad responses: %+v", rows)
	}
	// The real thing takes it out: the agent's answer to an INVITE the
	// server sent, from its SIP port, through the egress program.
	server := harness.ListenUDP(t, tb.Box, harness.BoxIP+":5060")
	invite := "INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP " + harness.BoxIP + ";branch=z9hG4bK1\r\nMax-Forwards: 70\r\n" +
		"From: <sip:a@x>;tag=1\r\nTo: <sip:b@x>\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"
	if _, err := server.WriteToUDPAddrPort([]byte(invite), netip.MustParseAddrPort(harness.AgentIP+":5060")); err != nil {
		t.Fatal(err)
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{response(harness.AgentIP, "503 Service Unavailable", "1 INVITE")})
	tb.WaitStatus(t, harness.AgentIP, false, 2*time.Second)
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSessionAgentDNS: an agent named by a DNS name with two A records,
// served by a test DNS server, has two destinations, each with its own
// status: the one sipp answers is in service, the silent one is not. The
// server is in the peer's namespace, which only the box's reaches: the
// daemon, run with --netns, must send its queries from in there.
// (/etc/netns/BOX/resolv.conf is cmd/cacctl's TestAgentResolverNetns: a
// daemon that missed it would ask the host's own servers.)
func TestSessionAgentDNS(t *testing.T) {
	tb := harness.SipTestbed(t)
	const second = "192.0.2.4"
	testenv.Addr(t, tb.Peer, tb.PeerIfc, second+"/24")
	dnsAddr := testDNS(t, tb.Peer, harness.AgentIP+":53", "peers.example.com.", harness.AgentIP, second)
	uas := testenv.StartSipp(t, tb.Peer, "-sf", testenv.ScenarioPath(t, "options-200"), "-i", harness.AgentIP, "-p", "5060", "-t", "u1")
	defer uas.Stop()
	cfg := harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\ncpu: {sample-interval: 200ms}\nsip-t1: 50ms\n" +
		"dns-server: \"" + dnsAddr + "\"\nrealms: [{name: core, address: " + harness.BoxIP + "}]\n" +
		"session-agents:\n  - {name: peers, hostname: peers.example.com, realm-id: core, ping-interval: 1s, ping-send-mode: continuous, ping-all-addresses: true}\n"
	tb.StartDaemon(t, harness.WriteConfig(t, cfg))
	tb.WaitStatus(t, second, false, 8*time.Second)
	tb.WaitStatus(t, harness.AgentIP, true, 2*time.Second)
	if rows := tb.AgentTargets(t); len(rows) != 2 {
		t.Errorf("targets: %+v, want one per address", rows)
	}
	out, _, _ := tb.Cacctl(t, "show", "sipd", "agents")
	if !strings.Contains(out, "Session Agent peers [In Service]") || !strings.Contains(out, "Destination: "+second+"  Source : core  Out of Service") {
		t.Errorf("show sipd agents:\n%s", out)
	}
}

// testDNS serves A records of name on listen, inside the namespace ns,
// until the test ends, and returns its address.
func testDNS(t *testing.T, ns, listen, name string, addrs ...string) string {
	t.Helper()
	var pc net.PacketConn
	if err := testenv.Do(ns, func() error {
		var err error
		pc, err = net.ListenPacket("udp", listen)
		return err
	}); err != nil {
		t.Fatalf("DNS server in %s: %v", ns, err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case q.Name == name && q.Qtype == dns.TypeA:
			for _, a := range addrs {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(a)})
			}
		case q.Name == name:
		default:
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}
