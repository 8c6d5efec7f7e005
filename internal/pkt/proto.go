package pkt

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// PPPoE codes (RFC 2516).
const (
	PADI = 0x09
	PADO = 0x07
	PADR = 0x19
	PADS = 0x65
	PADT = 0xa7
)

// PPPoE is a PPPoE discovery header with a Service-Name tag as payload
// unless Raw follows. VerType 0 means the valid 0x11; Length overrides.
type PPPoE struct {
	VerType uint8
	Code    uint8
	Session uint16
	Length  int
}

func (PPPoE) etherType() uint16 { return 0x8863 }

func (h PPPoE) wrap(p []byte, inner Layer) []byte {
	if inner == nil {
		p = []byte{0x01, 0x01, 0x00, 0x00} // Service-Name, any
	}
	vt := h.VerType
	if vt == 0 {
		vt = 0x11
	}
	n := len(p)
	if h.Length != 0 {
		n = h.Length
	}
	b := []byte{vt, h.Code}
	b = be16(b, h.Session)
	b = be16(b, uint16(n))
	return append(b, p...)
}

// L2TP message types (RFC 2661 §3.2).
const (
	SCCRQ = 1
	SCCRP = 2
	ICRQ  = 10
	ICRP  = 11
)

// L2TP is an L2TP control message whose first AVP is Message Type, with a
// Host Name AVP after it. Version 0 means 2. Flags, Length and AVPLen
// override the computed values, for malformed messages.
type L2TP struct {
	Version uint8
	MsgType uint16
	Flags   uint16
	Length  int
	AVPLen  int
	Vendor  uint16
	Attr    uint16
	Hidden  bool
	// ID is the receiver's tunnel ID (v2) or control connection ID (v3);
	// Session the v2 session ID.
	ID      uint32
	Session uint16
	Ns, Nr  uint16
	// AssignedID, when set, adds the Assigned Tunnel ID (v2) or Assigned
	// Control Connection ID (v3) AVP an SCCRQ or SCCRP carries.
	AssignedID uint32
	HiddenID   bool // the assigned ID's AVP with its H bit
}

func (h L2TP) wrap(p []byte, _ Layer) []byte {
	ver := uint16(h.Version)
	if ver == 0 {
		ver = 2
	}
	flags := h.Flags
	if flags == 0 {
		flags = 0xc800 | ver // T, L, S
	}
	avpLen := 8
	if h.AVPLen != 0 {
		avpLen = h.AVPLen
	}
	avpFlags := uint16(0x8000 | avpLen&0x3ff) // M
	if h.Hidden {
		avpFlags |= 0x4000
	}
	body := be16(nil, avpFlags)
	body = be16(body, h.Vendor)
	body = be16(body, h.Attr)
	body = be16(body, h.MsgType)
	host := "lac.example.net"
	body = be16(body, uint16(0x8000|(6+len(host))))
	body = append(body, 0, 0, 0, 7) // vendor 0, Host Name
	body = append(body, host...)
	hidden := byte(0x80)
	if h.HiddenID {
		hidden |= 0x40
	}
	if h.AssignedID != 0 && ver == 3 {
		body = append(body, hidden, 10, 0, 0, 0, 61)
		body = binary.BigEndian.AppendUint32(body, h.AssignedID)
	} else if h.AssignedID != 0 {
		body = append(body, hidden, 8, 0, 0, 0, 9)
		body = be16(body, uint16(h.AssignedID))
	}
	body = append(body, p...)
	n := 12 + len(body)
	if h.Length != 0 {
		n = h.Length
	}
	b := be16(nil, flags)
	b = be16(b, uint16(n))
	b = l2tpIDs(b, ver, h.ID, h.Session)
	b = be16(be16(b, h.Ns), h.Nr)
	return append(b, body...)
}

// l2tpIDs appends the IDs of a control header.
func l2tpIDs(b []byte, ver uint16, id uint32, session uint16) []byte {
	if ver == 3 {
		return binary.BigEndian.AppendUint32(b, id) // control connection ID
	}
	return be16(be16(b, uint16(id)), session)
}

// ZLBOf is a zero-length-body acknowledgement of version ver to the
// tunnel (or control connection) id.
func ZLBOf(ver uint16, id uint32, ns, nr uint16) Raw {
	b := be16(nil, 0xc800|ver)
	b = be16(b, 12)
	b = l2tpIDs(b, ver, id, 0)
	return Raw(be16(be16(b, ns), nr))
}

// ZLB is an L2TPv2 zero-length-body acknowledgement.
func ZLB() Raw {
	return Raw{0xc8, 0x02, 0x00, 12, 0, 1, 0, 0, 0, 1, 0, 1}
}

// SIP is a SIP request over UDP. Headers are written as given, one per
// line; To is a header like any other so tests can shape it freely.
type SIP struct {
	Method  string
	URI     string
	Headers []string
	Body    string
	LF      bool   // bare LF line ends instead of CRLF
	Prefix  string // bytes before the request line, such as CRLFs
}

// SIPRequest returns a request with the usual headers and the given To.
func SIPRequest(method, to string) SIP {
	return SIP{Method: method, Headers: []string{
		"Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bK776asdhds",
		"Max-Forwards: 70",
		"To: " + to,
		`From: "Alice" <sip:alice@example.com>;tag=1928301774`,
		"Call-ID: a84b4c76e66710@192.0.2.1",
		"CSeq: 314159 " + method,
		"Contact: <sip:alice@192.0.2.1>",
		"Content-Length: 0",
	}}
}

// With returns s with the first header called name (any case) given
// value, or with it added at the end when s has none: a new Call-ID for
// every call of a flood, another CSeq or Via branch for a new transaction.
func (s SIP) With(name, value string) SIP {
	hs := append([]string(nil), s.Headers...)
	for i, h := range hs {
		if n, _, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(n), name) {
			hs[i] = name + ": " + value
			s.Headers = hs
			return s
		}
	}
	s.Headers = append(hs, name+": "+value)
	return s
}

// Without returns s without the headers called name (any case).
func (s SIP) Without(name string) SIP {
	var hs []string
	for _, h := range s.Headers {
		if n, _, ok := strings.Cut(h, ":"); !ok || !strings.EqualFold(strings.TrimSpace(n), name) {
			hs = append(hs, h)
		}
	}
	s.Headers = hs
	return s
}

func (s SIP) wrap(p []byte, _ Layer) []byte {
	eol := "\r\n"
	if s.LF {
		eol = "\n"
	}
	uri := s.URI
	if uri == "" {
		uri = "sip:bob@example.com"
	}
	var b strings.Builder
	b.WriteString(s.Prefix)
	fmt.Fprintf(&b, "%s %s SIP/2.0%s", s.Method, uri, eol)
	for _, h := range s.Headers {
		b.WriteString(h + eol)
	}
	b.WriteString(eol + s.Body)
	return append([]byte(b.String()), p...)
}
