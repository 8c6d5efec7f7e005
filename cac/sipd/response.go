package sipd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/xdpcac/xdpcac/cac/sessions"
)

// ErrNotResponse is what ResponseOf says of anything but a SIP response.
var ErrNotResponse = errors.New("not a SIP response")

// Response is what the session agent rules read of a response the filter
// handed up: its code, the method of the request it answers, and
// Retry-After.
type Response struct {
	Code       int
	CSeqMethod string
	RetryAfter time.Duration
}

// ResponseOf parses raw as a SIP response. A message cut short by the
// filter's copy is read up to its headers.
func ResponseOf(raw []byte) (Response, error) {
	msg, err := sip.ParseMessage(HeadersOnly(raw))
	if err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrNotResponse, err)
	}
	res, ok := msg.(*sip.Response)
	if !ok {
		return Response{}, fmt.Errorf("%w: a request", ErrNotResponse)
	}
	if res.SipVersion != "SIP/2.0" || res.StatusCode < 100 || res.StatusCode > 699 {
		return Response{}, fmt.Errorf("%w: status line %q %d", ErrNotResponse, res.SipVersion, res.StatusCode)
	}
	cseq := res.CSeq()
	if cseq == nil {
		return Response{}, fmt.Errorf("%w: no CSeq", ErrNotResponse)
	}
	return Response{Code: res.StatusCode, CSeqMethod: string(cseq.MethodName), RetryAfter: retryAfter(res)}, nil
}

// HeadersOnly is a message with its body cut off and Content-Length 0, so
// that one the filter copied only in part still parses: the rules and the
// 503 answer need its headers alone.
func HeadersOnly(raw []byte) []byte {
	end := -1
	for i := 0; i+3 < len(raw); i++ {
		if raw[i] == '\r' && raw[i+1] == '\n' && raw[i+2] == '\r' && raw[i+3] == '\n' {
			end = i + 2
			break
		}
	}
	if end < 0 {
		// No blank line: a copy the filter cut short (at CAC_SIP_COPY)
		// keeps its whole lines; with none, the parser says what is wrong.
		for i := len(raw) - 2; i >= 0; i-- {
			if raw[i] == '\r' && raw[i+1] == '\n' {
				end = i + 2
				break
			}
		}
		if end < 0 {
			return raw
		}
	}
	var out []byte
	for line := range splitLines(raw[:end]) {
		name := headerName(line)
		if name == "content-length" || name == "l" {
			continue
		}
		out = append(append(out, line...), '\r', '\n')
	}
	return append(out, "Content-Length: 0\r\n\r\n"...)
}

// splitLines yields the CRLF-ended lines of b without their CRLF.
func splitLines(b []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			i := 0
			for i+1 < len(b) && !(b[i] == '\r' && b[i+1] == '\n') {
				i++
			}
			if i+1 >= len(b) {
				yield(b)
				return
			}
			if !yield(b[:i]) {
				return
			}
			b = b[i+2:]
		}
	}
}

// headerName is a header line's name in lower case, "" for other lines.
func headerName(line []byte) string {
	for i, c := range line {
		if c == ':' || c == ' ' || c == '\t' {
			n := make([]byte, i)
			for j := range n {
				n[j] = line[j] | 0x20
			}
			return string(n)
		}
	}
	return ""
}

// MessageOf parses raw, a request or a response, as the capacity table
// reads it: a request's method, or a response's code and the method of
// its CSeq, in upper case (the filter classifies methods in any case).
// FromServer is left to the caller, who knows where it was seen.
func MessageOf(raw []byte) (sessions.Message, error) {
	msg, err := sip.ParseMessage(HeadersOnly(raw))
	if err != nil {
		return sessions.Message{}, fmt.Errorf("not a SIP message: %w", err)
	}
	switch m := msg.(type) {
	case *sip.Request:
		return sessions.Message{Request: true, Method: strings.ToUpper(string(m.Method))}, nil
	case *sip.Response:
		cseq := m.CSeq()
		if cseq == nil {
			return sessions.Message{}, errors.New("a SIP response without CSeq")
		}
		return sessions.Message{Code: m.StatusCode, CSeqMethod: strings.ToUpper(string(cseq.MethodName))}, nil
	}
	return sessions.Message{}, fmt.Errorf("not a SIP message: %T", msg)
}
