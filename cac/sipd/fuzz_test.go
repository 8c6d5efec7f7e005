package sipd

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// FuzzResponseOf: what the fast path hands up from an agent is parsed or
// refused, never a panic; a parsed response has a code it could carry.
func FuzzResponseOf(f *testing.F) {
	f.Add([]byte("SIP/2.0 503 Service Unavailable\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nCSeq: 1 INVITE\r\nRetry-After: 30\r\nContent-Length: 5\r\n\r\nab"))
	f.Add([]byte("SIP/2.0 503\r\n\r\n"))
	f.Add([]byte("INVITE sip:a@b SIP/2.0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := ResponseOf(raw)
		if err == nil && (r.Code < 100 || r.Code > 699 || r.RetryAfter < 0) {
			t.Fatalf("parsed %+v", r)
		}
	})
}

// FuzzReject503: a refused request is answered with a 503 that parses as
// one, or refused; ReplyAddr never panics.
func FuzzReject503(f *testing.F) {
	f.Add([]byte("INVITE sip:bob@192.0.2.1 SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.2:5060;branch=z9hG4bK1;rport\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@x>\r\nCall-ID: c\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("ACK sip:b@x SIP/2.0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ReplyAddr(raw, netip.MustParseAddrPort("192.0.2.2:5060"))
		out, err := Reject(raw, 503, 10*time.Second, "")
		if err != nil {
			return
		}
		if !strings.HasPrefix(string(out), "SIP/2.0 503 ") {
			t.Fatalf("answer %q", out)
		}
		if r, err := ResponseOf(out); err != nil || r.Code != 503 {
			t.Fatalf("the answer does not parse as a 503: %+v, %v\n%s", r, err, out)
		}
	})
}
