package testenv_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// Documentation addresses (RFC 5737) on the two ends of the veth.
const (
	addrA = "192.0.2.1"
	addrB = "192.0.2.2"
)

// sippPair makes two namespaces joined by a veth, addrA in a, addrB in b.
func sippPair(t *testing.T) (a, b string) {
	t.Helper()
	testenv.RequireBPF(t)
	a, b = testenv.Netns(t), testenv.Netns(t)
	va, vb := testenv.Veth(t, a, b)
	testenv.Addr(t, a, va, addrA+"/24")
	testenv.Addr(t, b, vb, addrB+"/24")
	return a, b
}

// listenUDP opens a UDP socket on addr:port inside ns; it stays there.
func listenUDP(t *testing.T, ns, addr string, port int) *net.UDPConn {
	t.Helper()
	var conn *net.UDPConn
	err := testenv.Do(ns, func() error {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(addr), Port: port})
		conn = c
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s:%d in %s: %v", addr, port, ns, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// sipMsg is a parsed SIP message: its first line and its headers by
// lower-case name (the first of each).
type sipMsg struct {
	first string
	hdr   map[string]string
}

func parseSIP(b []byte) sipMsg {
	head, _, _ := strings.Cut(string(b), "\r\n\r\n")
	lines := strings.Split(head, "\r\n")
	m := sipMsg{first: lines[0], hdr: map[string]string{}}
	for _, l := range lines[1:] {
		name, value, ok := strings.Cut(l, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		if _, seen := m.hdr[name]; ok && !seen {
			m.hdr[name] = strings.TrimSpace(value)
		}
	}
	return m
}

// ping sends one OPTIONS from addrA in ns to addrB:5060 and returns the
// response, after checking that it belongs to the request.
func ping(t *testing.T, ns string) sipMsg {
	t.Helper()
	conn := listenUDP(t, ns, addrA, 0)
	port := conn.LocalAddr().(*net.UDPAddr).Port
	callID := testenv.Unique("ping") + "@" + addrA
	req := strings.Join([]string{
		"OPTIONS sip:" + addrB + ":5060 SIP/2.0",
		fmt.Sprintf("Via: SIP/2.0/UDP %s:%d;branch=z9hG4bK-xdpcac-1", addrA, port),
		"From: <sip:test@" + addrA + ">;tag=xdpcac1",
		"To: <sip:" + addrB + ":5060>",
		"Call-ID: " + callID,
		"CSeq: 7 OPTIONS",
		"Max-Forwards: 70",
		"Content-Length: 0",
		"", ""}, "\r\n")
	dst := &net.UDPAddr{IP: net.ParseIP(addrB), Port: 5060}
	if _, err := conn.WriteToUDP([]byte(req), dst); err != nil {
		t.Fatalf("send OPTIONS: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 65535)
	n, _, err := conn.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("no answer to OPTIONS: %v", err)
	}
	res := parseSIP(buf[:n])
	if res.hdr["call-id"] != callID || res.hdr["cseq"] != "7 OPTIONS" ||
		!strings.Contains(res.hdr["via"], "branch=z9hG4bK-xdpcac-1") ||
		!strings.Contains(res.hdr["to"], ";tag=") {
		t.Fatalf("answer does not match the OPTIONS (Call-ID, CSeq, Via, To tag):\n%s", buf[:n])
	}
	return res
}

func TestSippOptions(t *testing.T) {
	for _, tc := range []struct {
		scenario, status, retryAfter string
	}{
		{"options-200", "SIP/2.0 200 OK", ""},
		{"options-503", "SIP/2.0 503 Service Unavailable", "2"},
		{"options-404", "SIP/2.0 404 Not Found", ""},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			a, b := sippPair(t)
			testenv.StartSipp(t, b, "-sf", testenv.ScenarioPath(t, tc.scenario),
				"-i", addrB, "-p", "5060", "-t", "u1")
			for i := range 2 { // two pings, two sipp calls
				res := ping(t, a)
				if res.first != tc.status || res.hdr["retry-after"] != tc.retryAfter {
					t.Fatalf("ping %d: got %q, Retry-After %q; want %q, Retry-After %q",
						i, res.first, res.hdr["retry-after"], tc.status, tc.retryAfter)
				}
			}
		})
	}
}

// refuse answers the first INVITE on conn with 503 (again for each
// retransmission) and checks the ACK that follows against RFC 3261 17.1.1.3.
func refuse(conn *net.UDPConn) error {
	buf := make([]byte, 65535)
	var invite sipMsg
	var res []byte
	for {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			return fmt.Errorf("responder: %v", err)
		}
		m := parseSIP(buf[:n])
		switch {
		case strings.HasPrefix(m.first, "INVITE "):
			if res == nil {
				invite = m
				res = []byte(strings.Join([]string{
					"SIP/2.0 503 Service Unavailable",
					"Via: " + m.hdr["via"],
					"From: " + m.hdr["from"],
					"To: " + m.hdr["to"] + ";tag=refuser1",
					"Call-ID: " + m.hdr["call-id"],
					"CSeq: " + m.hdr["cseq"],
					"Content-Length: 0",
					"", ""}, "\r\n"))
			}
			if _, err := conn.WriteToUDP(res, from); err != nil {
				return fmt.Errorf("responder: send 503: %v", err)
			}
		case strings.HasPrefix(m.first, "ACK "):
			if res == nil {
				return fmt.Errorf("ACK before any INVITE:\n%s", buf[:n])
			}
			ruri := strings.TrimPrefix(strings.TrimSuffix(invite.first, " SIP/2.0"), "INVITE ")
			want := map[string]string{
				"first":   "ACK " + ruri + " SIP/2.0",
				"via":     invite.hdr["via"],
				"from":    invite.hdr["from"],
				"to":      invite.hdr["to"] + ";tag=refuser1",
				"call-id": invite.hdr["call-id"],
				"cseq":    strings.TrimSuffix(invite.hdr["cseq"], " INVITE") + " ACK",
			}
			m.hdr["first"] = m.first
			for k, v := range want {
				if m.hdr[k] != v {
					return fmt.Errorf("ACK %s: got %q, want %q", k, m.hdr[k], v)
				}
			}
			return nil
		default:
			return fmt.Errorf("responder: unexpected message:\n%s", buf[:n])
		}
	}
}

func TestSippInviteRefused(t *testing.T) {
	t.Parallel()
	a, b := sippPair(t)
	conn := listenUDP(t, a, addrA, 5060)
	errc := make(chan error, 1)
	go func() { errc <- refuse(conn) }()
	uac := testenv.StartSipp(t, b, "-sf", testenv.ScenarioPath(t, "invite-uac"),
		"-i", addrB, "-p", "5060", "-t", "u1", "-m", "1", "-recv_timeout", "5000",
		addrA+":5060")
	if err := uac.Wait(15 * time.Second); err != nil {
		t.Error(err)
	}
	if err := <-errc; err != nil {
		t.Error(err)
	}
}

func TestSippInviteAnswered(t *testing.T) {
	t.Parallel()
	a, b := sippPair(t)
	uas := testenv.StartSipp(t, a, "-sf", testenv.ScenarioPath(t, "invite-uas"),
		"-i", addrA, "-p", "5060", "-t", "u1", "-m", "1")
	uac := testenv.StartSipp(t, b, "-sf", testenv.ScenarioPath(t, "invite-uac-200.xml"),
		"-i", addrB, "-p", "5060", "-t", "u1", "-m", "1", "-recv_timeout", "5000",
		addrA+":5060")
	if err := uac.Wait(15 * time.Second); err != nil {
		t.Errorf("UAC: %v", err)
	}
	if err := uas.Wait(5 * time.Second); err != nil {
		t.Errorf("UAS: %v", err)
	}
}
