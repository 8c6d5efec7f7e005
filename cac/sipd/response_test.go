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
