package sipd

import (
	"strings"
	"testing"
	"time"
)

func TestResponseOf(t *testing.T) {
	raw := "SIP/2.0 503 Service Unavailable\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nFrom: <sip:a@192.0.2.1>;tag=1\r\n" +
		"To: <sip:b@192.0.2.2>;tag=2\r\nCall-ID: c1\r\nCSeq: 7 INVITE\r\nRetry-After: 30\r\nContent-Length: 20\r\n\r\nv=0\r\n"
	// The filter's copy may end inside the body.
	got, err := ResponseOf([]byte(raw))
	if err != nil || got != (Response{Code: 503, CSeqMethod: "INVITE", RetryAfter: 30 * time.Second}) {
		t.Fatalf("ResponseOf = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "garbage\r\n\r\n", "INVITE sip:b@x SIP/2.0\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK1\r\nCSeq: 1 INVITE\r\n\r\n",
		"SIP/2.0 503 X\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK1\r\n\r\n"} {
		if _, err := ResponseOf([]byte(bad)); err == nil {
			t.Errorf("ResponseOf(%q) accepted", bad)
		}
	}
	if h := string(HeadersOnly([]byte(raw))); !strings.HasSuffix(h, "Retry-After: 30\r\nContent-Length: 0\r\n\r\n") {
		t.Errorf("HeadersOnly = %q", h)
	}
}

// TestMessageOfCutShort: a copy the filter cut inside its headers, with no
// blank line, is read up to its last whole line.
func TestMessageOfCutShort(t *testing.T) {
	raw := "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nFrom: <sip:a@192.0.2.1>;tag=1\r\n" +
		"To: <sip:b@192.0.2.2>;tag=2\r\nCall-ID: c1\r\nCSeq: 7 invite\r\nRecord-Route: <sip:192.0.2.1;lr>\r\nX-Lo"
	m, err := MessageOf([]byte(raw))
	if err != nil || m.Code != 200 || m.CSeqMethod != "INVITE" || m.Request {
		t.Fatalf("MessageOf = %+v, %v", m, err)
	}
	if m, err := MessageOf([]byte("bye sip:b@192.0.2.2 SIP/2.0\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK2\r\nCall-ID: c1\r\nCSeq: 8 BYE\r\n\r\n")); err != nil || !m.Request || m.Method != "BYE" {
		t.Errorf("MessageOf(bye) = %+v, %v", m, err)
	}
}
