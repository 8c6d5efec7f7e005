package sipd

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// Errors of Reject and ReplyAddr.
var (
	ErrNotRequest    = errors.New("not a SIP request")
	ErrMissingHeader = errors.New("missing mandatory header")
	ErrACK           = errors.New("ACK is never answered")
)

// DefaultSIPPort is where a UDP response goes when the Via names no port.
const DefaultSIPPort = 5060

// parseRequest parses raw as one SIP request with sipgo's parser.
func parseRequest(raw []byte) (*sip.Request, error) {
	msg, err := sip.ParseMessage(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRequest, err)
	}
	switch m := msg.(type) {
	case *sip.Request:
		return m, nil
	case *sip.Response:
		return nil, fmt.Errorf("%w: a response (%d %s)", ErrNotRequest, m.StatusCode, m.Reason)
	default:
		return nil, fmt.Errorf("%w: %T", ErrNotRequest, msg)
	}
}

// reasonPhrases are the phrases of the codes an answer on a peer's behalf
// is likely to carry; any other code gets "Unavailable".
var reasonPhrases = map[int]string{
	480: "Temporarily Unavailable", 486: "Busy Here", 500: "Server Internal Error",
	502: "Bad Gateway", 503: "Service Unavailable", 504: "Server Time-out", 600: "Busy Everywhere", 603: "Decline",
}

// Reject builds the answer to a raw SIP request (the bytes of the UDP
// payload the filter handed up): status code (400 to 699) with its
// phrase, Retry-After: retryAfter in whole seconds (rounded up; no
// header when retryAfter <= 0), copying every Via in order, From, To (adding a To tag
// when there is none), Call-ID and CSeq from the request, Content-Length 0
// and Server: xdpcac. The Via values are copied as they are: a stateless
// answer does not know the source to fill received/rport with; ReplyAddr
// applies that rule to pick the destination instead.
//
// It refuses anything that is not a parseable SIP request, a request without
// Via, From, To, Call-ID or CSeq, and an ACK (never answered).
//
// When why is not empty a Warning header (code 399, agent xdpcac) tells
// the operator reading the SIP server's log what refused the request.
func Reject(raw []byte, code int, retryAfter time.Duration, why string) ([]byte, error) {
	if code < 400 || code > 699 {
		return nil, fmt.Errorf("sipd: reject: code %d is not a final error code (400-699)", code)
	}
	req, err := parseRequest(raw)
	if err != nil {
		return nil, fmt.Errorf("sipd: reject 503: %w", err)
	}
	if req.IsAck() {
		return nil, fmt.Errorf("sipd: reject 503: %w", ErrACK)
	}
	// Only a SIP/2.0 request with a method and a Via naming a host is
	// answered: the 503 echoes them, and garbage must get no echo.
	if req.SipVersion != "SIP/2.0" || !isToken(string(req.Method)) {
		return nil, fmt.Errorf("sipd: reject 503: %w: request line %q %q", ErrNotRequest, req.Method, req.SipVersion)
	}
	if v := req.Via(); v == nil || v.Host == "" || v.ProtocolName != "SIP" {
		return nil, fmt.Errorf("sipd: reject 503: %w: Via", ErrMissingHeader)
	}
	vias := req.GetHeaders("Via")
	var missing []string
	if len(vias) == 0 {
		missing = append(missing, "Via")
	}
	if req.From() == nil {
		missing = append(missing, "From")
	}
	if req.To() == nil {
		missing = append(missing, "To")
	}
	if req.CallID() == nil {
		missing = append(missing, "Call-ID")
	}
	if req.CSeq() == nil {
		missing = append(missing, "CSeq")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sipd: reject 503 %s: %w: %s", req.Method, ErrMissingHeader, strings.Join(missing, ", "))
	}

	phrase, ok := reasonPhrases[code]
	if !ok {
		phrase = "Unavailable"
	}
	res := sip.NewResponse(code, phrase)
	res.SipVersion = req.SipVersion
	for _, v := range vias {
		res.AppendHeader(sip.HeaderClone(v))
	}
	res.AppendHeader(sip.HeaderClone(req.From()))
	to := sip.HeaderClone(req.To()).(*sip.ToHeader)
	if !to.Params.Has("tag") {
		if to.Params == nil {
			to.Params = sip.NewParams()
		}
		to.Params.Add("tag", sip.GenerateTagN(16))
	}
	res.AppendHeader(to)
	res.AppendHeader(sip.HeaderClone(req.CallID()))
	res.AppendHeader(sip.HeaderClone(req.CSeq()))
	if retryAfter > 0 {
		secs := (retryAfter + time.Second - 1) / time.Second
		res.AppendHeader(sip.NewHeader("Retry-After", strconv.FormatInt(int64(secs), 10)))
	}
	if why != "" {
		res.AppendHeader(sip.NewHeader("Warning", `399 xdpcac "`+strings.ReplaceAll(why, `"`, "'")+`"`))
	}
	res.AppendHeader(sip.NewHeader("Server", UserAgent))
	res.SetBody(nil) // Content-Length: 0
	out := []byte(res.String())
	// The parser takes some headers it cannot write back (a To URI of
	// "A:>" comes out as "<a:>>"): send nothing a caller could not parse.
	if _, err := ResponseOf(out); err != nil {
		return nil, fmt.Errorf("sipd: reject 503 %s: %w: the answer would not parse: %v", req.Method, ErrNotRequest, err)
	}
	return out, nil
}

// ReplyAddr is where a response to the raw request goes per RFC 3261
// §18.2.2 for UDP, given the packet's source address src:
//   - host: the top Via's received parameter when present; else the sent-by
//     host, except that when sent-by is a hostname or an IP other than src's
//     the server owes it received=src (§18.2.1), so src's IP is used;
//   - port: the top Via's rport value when present, src's port for an empty
//     rport (RFC 3581), else the sent-by port, else 5060.
//
// src may be the zero value when unknown; a sent-by hostname then fails.
func ReplyAddr(raw []byte, src netip.AddrPort) (netip.AddrPort, error) {
	req, err := parseRequest(raw)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sipd: reply address: %w", err)
	}
	via := req.Via()
	if via == nil {
		return netip.AddrPort{}, fmt.Errorf("sipd: reply address: %w: Via", ErrMissingHeader)
	}
	srcIP := src.Addr().Unmap()

	var host netip.Addr
	if rcv, ok := via.Params.Get("received"); ok && rcv != "" {
		if host, err = netip.ParseAddr(strings.Trim(rcv, "[]")); err != nil {
			return netip.AddrPort{}, fmt.Errorf("sipd: reply address: Via received=%q: %w", rcv, err)
		}
	} else if sentBy, err := netip.ParseAddr(strings.Trim(via.Host, "[]")); err == nil && (!srcIP.IsValid() || sentBy.Unmap() == srcIP) {
		host = sentBy
	} else if srcIP.IsValid() {
		host = srcIP
	} else {
		return netip.AddrPort{}, fmt.Errorf("sipd: reply address: Via sent-by %q is no IP and the source is unknown", via.Host)
	}

	port := uint16(DefaultSIPPort)
	if via.Port > 0 && via.Port <= 0xffff {
		port = uint16(via.Port)
	}
	if rp, ok := via.Params.Get("rport"); ok {
		switch {
		case rp != "":
			n, err := strconv.ParseUint(rp, 10, 16)
			if err != nil || n == 0 {
				return netip.AddrPort{}, fmt.Errorf("sipd: reply address: Via rport=%q is no port", rp)
			}
			port = uint16(n)
		case src.IsValid():
			port = src.Port()
		}
	}
	return netip.AddrPortFrom(host.Unmap(), port), nil
}

// isToken reports whether s is a SIP method: letters only, as every
// method of RFC 3261 and its extensions is.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
