package sipd

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
)

// invite is an INVITE as a proxy forwards it: two Via, no To tag, a body.
const invite = "INVITE sip:+15551230000@sbc.example.net SIP/2.0\r\n" +
	"Via: SIP/2.0/UDP 198.51.100.7:5070;branch=z9hG4bK-proxy-1;rport\r\n" +
	"Via: SIP/2.0/UDP 10.0.0.2:5060;branch=z9hG4bK-ua-1;received=192.0.2.44\r\n" +
	"Max-Forwards: 69\r\n" +
	"From: \"Alice\" <sip:alice@example.org>;tag=a1b2c3\r\n" +
	"To: <sip:+15551230000@sbc.example.net>\r\n" +
	"Call-ID: 4f9c2a7e@10.0.0.2\r\n" +
	"CSeq: 314159 INVITE\r\n" +
	"Contact: <sip:alice@10.0.0.2:5060>\r\n" +
	"Content-Type: application/sdp\r\n" +
	"Content-Length: 30\r\n" +
	"\r\n" +
	"v=0\r\no=- 1 1 IN IP4 10.0.0.2\r\n"

func TestReject503(t *testing.T) {
	out, err := Reject([]byte(invite), 503, 30*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sip.ParseMessage(out)
	if err != nil {
		t.Fatalf("503 does not parse: %v\n%s", err, out)
	}
	res, ok := msg.(*sip.Response)
	if !ok || res.StatusCode != 503 || res.Reason != "Service Unavailable" {
		t.Fatalf("got %s", out)
	}
	req, _ := sip.ParseMessage([]byte(invite))
	in := req.(*sip.Request)

	vias := res.GetHeaders("Via")
	inVias := in.GetHeaders("Via")
	if len(vias) != 2 {
		t.Fatalf("%d Via in the 503, want 2:\n%s", len(vias), out)
	}
	for i := range vias {
		if vias[i].Value() != inVias[i].Value() {
			t.Errorf("Via %d = %q, want %q", i, vias[i].Value(), inVias[i].Value())
		}
	}
	if strings.Index(string(out), "z9hG4bK-proxy-1") > strings.Index(string(out), "z9hG4bK-ua-1") {
		t.Error("Via order changed")
	}
	for _, name := range []string{"From", "Call-ID", "CSeq"} {
		if got, want := res.GetHeader(name).Value(), in.GetHeader(name).Value(); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	to := res.To()
	if tag, ok := to.Params.Get("tag"); !ok || tag == "" {
		t.Errorf("To without tag: %s", to.Value())
	}
	if to.Address.String() != in.To().Address.String() {
		t.Errorf("To address %s, want %s", to.Address.String(), in.To().Address.String())
	}
	for name, want := range map[string]string{"Retry-After": "30", "Server": "xdpcac", "Content-Length": "0"} {
		if h := res.GetHeader(name); h == nil || h.Value() != want {
			t.Errorf("%s = %v, want %q", name, h, want)
		}
	}
	if len(res.Body()) != 0 || res.GetHeader("Contact") != nil || res.GetHeader("Content-Type") != nil {
		t.Errorf("503 carries more than it should:\n%s", out)
	}

	// Two Via values on one line are two Via, in order.
	combined := strings.Replace(invite, "rport\r\nVia: ", "rport, ", 1)
	if out, err = Reject([]byte(combined), 503, 30*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := sip.ParseMessage(out); got == nil || len(got.GetHeaders("Via")) != 2 ||
		strings.Index(string(out), "z9hG4bK-proxy-1") > strings.Index(string(out), "z9hG4bK-ua-1") {
		t.Errorf("combined Via line:\n%s", out)
	}

	// A To tag that is there is kept; 1.5 s rounds up; 0 means no header.
	tagged := strings.Replace(invite, "To: <sip:+15551230000@sbc.example.net>", "To: <sip:b@x>;tag=keep", 1)
	out, err = Reject([]byte(tagged), 503, 1500*time.Millisecond, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "\r\nTo: <sip:b@x>;tag=keep\r\n") || !strings.Contains(string(out), "\r\nRetry-After: 2\r\n") {
		t.Errorf("tagged request:\n%s", out)
	}
	if out, err = Reject([]byte(invite), 503, 0, ""); err != nil || strings.Contains(string(out), "Retry-After") {
		t.Errorf("retryAfter 0: %v\n%s", err, out)
	}
}

func TestReject503Refuses(t *testing.T) {
	ack := strings.Replace(strings.Replace(invite, "INVITE sip:", "ACK sip:", 1), "CSeq: 314159 INVITE", "CSeq: 314159 ACK", 1)
	response := "SIP/2.0 200 OK\r\n" +
		"Via: SIP/2.0/UDP 10.0.0.2:5060;branch=z9hG4bK-ua-1\r\n" +
		"From: <sip:alice@example.org>;tag=a\r\nTo: <sip:b@x>;tag=b\r\n" +
		"Call-ID: x\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
	noCallID := strings.Replace(invite, "Call-ID: 4f9c2a7e@10.0.0.2\r\n", "", 1)
	noVia := strings.NewReplacer(
		"Via: SIP/2.0/UDP 198.51.100.7:5070;branch=z9hG4bK-proxy-1;rport\r\n", "",
		"Via: SIP/2.0/UDP 10.0.0.2:5060;branch=z9hG4bK-ua-1;received=192.0.2.44\r\n", "").Replace(invite)
	for name, tc := range map[string]struct {
		raw  string
		want error
	}{
		"garbage":    {"\x16\x03\x01 hello, not SIP at all", ErrNotRequest},
		"empty":      {"", ErrNotRequest},
		"response":   {response, ErrNotRequest},
		"ack":        {ack, ErrACK},
		"no Call-ID": {noCallID, ErrMissingHeader},
		"no Via":     {noVia, ErrMissingHeader},
	} {
		if out, err := Reject([]byte(tc.raw), 503, time.Second, ""); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v\n%s", name, err, tc.want, out)
		}
	}
}

func TestReplyAddr(t *testing.T) {
	req := func(via string) []byte {
		return []byte("OPTIONS sip:sbc.example.net SIP/2.0\r\nVia: " + via + "\r\n" +
			"From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n")
	}
	src := ap("198.51.100.7:40000")
	for _, tc := range []struct {
		via  string
		src  netip.AddrPort
		want netip.AddrPort
	}{
		// sent-by is the source: its host and port, 5060 by default
		{"SIP/2.0/UDP 198.51.100.7:5070;branch=z9hG4bK1", src, ap("198.51.100.7:5070")},
		{"SIP/2.0/UDP 198.51.100.7;branch=z9hG4bK1", src, ap("198.51.100.7:5060")},
		// source unknown: sent-by as written
		{"SIP/2.0/UDP 10.0.0.2:5070;branch=z9hG4bK1", netip.AddrPort{}, ap("10.0.0.2:5070")},
		// sent-by elsewhere or a name: received=src is owed (§18.2.1)
		{"SIP/2.0/UDP 10.0.0.2:5070;branch=z9hG4bK1", src, ap("198.51.100.7:5070")},
		{"SIP/2.0/UDP pbx.example.org:5080;branch=z9hG4bK1", src, ap("198.51.100.7:5080")},
		// rport without value: source port (RFC 3581)
		{"SIP/2.0/UDP 10.0.0.2:5070;rport;branch=z9hG4bK1", src, ap("198.51.100.7:40000")},
		// received and rport with values win
		{"SIP/2.0/UDP 10.0.0.2:5070;received=203.0.113.5;rport=6000;branch=z9hG4bK1", src, ap("203.0.113.5:6000")},
		{"SIP/2.0/UDP 10.0.0.2;received=203.0.113.5;branch=z9hG4bK1", src, ap("203.0.113.5:5060")},
		{"SIP/2.0/UDP [2001:db8::2]:5070;branch=z9hG4bK1", ap("[2001:db8::2]:1234"), ap("[2001:db8::2]:5070")},
	} {
		got, err := ReplyAddr(req(tc.via), tc.src)
		if err != nil || got != tc.want {
			t.Errorf("ReplyAddr(Via: %s, src %v) = %v, %v; want %v", tc.via, tc.src, got, err, tc.want)
		}
	}
	if _, err := ReplyAddr(req("SIP/2.0/UDP pbx.example.org;branch=z9hG4bK1"), netip.AddrPort{}); err == nil {
		t.Error("sent-by name without a source: no error")
	}
	if _, err := ReplyAddr([]byte("garbage"), src); !errors.Is(err, ErrNotRequest) {
		t.Errorf("garbage: %v", err)
	}
}
