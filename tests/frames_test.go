package tests

import (
	"strings"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
)

type frameCase struct {
	name  string
	frame []byte
	want  classify.Result
}

func sess(c cac.Class) classify.Result { return classify.Result{Kind: cac.Session, Class: c} }

// odd is r for a SIP request in a form stricter parsers miss.
func odd(r classify.Result) classify.Result {
	r.Odd = true
	return r
}

// strangerDialog is an in-dialog request of a dialog no INVITE of
// internal/pkt opened: its Call-ID is another.
func strangerDialog(method string) SIP {
	s := SIPRequest(method, toTag)
	for i, h := range s.Headers {
		if strings.HasPrefix(h, "Call-ID:") {
			s.Headers[i] = "Call-ID: not-admitted@192.0.2.9"
		}
	}
	return s
}

// sipPrefixed is a request with bytes before its request line.
func sipPrefixed(prefix, method, to string) []byte {
	s := SIPRequest(method, to)
	s.Prefix = prefix
	return v4udp(5060, s)
}

var (
	unwatched = classify.Result{Kind: cac.Unwatched}
	other     = classify.Result{Kind: cac.Other}
	inDialog  = classify.Result{Kind: cac.InDialog}
	fragment  = classify.Result{Kind: cac.Fragment}
	malformed = classify.Result{Kind: cac.Malformed}
)

// Encapsulations that every class is sent in.
var (
	l2Stacks = map[string][]Layer{
		"untagged": {Ether{}},
		"dot1q":    {Ether{}, VLAN{ID: 100}},
		"qinq":     {Ether{}, VLAN{TPID: 0x88a8, ID: 10}, VLAN{ID: 200}},
		"qinq9100": {Ether{}, VLAN{TPID: 0x9100, ID: 11}, VLAN{ID: 201}},
		// A third tag: a pppoe-server on a stacked VLAN device answers it.
		"three-tags": {Ether{}, VLAN{TPID: 0x88a8, ID: 12}, VLAN{ID: 202}, VLAN{ID: 302}},
	}
	ipStacks = map[string][]Layer{
		"ipv4":                {IPv4{}},
		"ipv4-options":        {IPv4{Options: []byte{0x94, 0x04, 0, 0, 0x01, 0x01, 0x01, 0x00}}}, // router alert, NOPs
		"ipv4-first-fragment": {IPv4{MF: true}},
		"ipv6":                {IPv6{}},
		"ipv6-4ext":           {IPv6{Ext: []Ext{{Proto: 0}, {Proto: 43, Len: 1}, {Proto: 60}, {Proto: 44}}}},
		"ipv6-first-fragment": {IPv6{Ext: []Ext{{Proto: 44, MF: true}}}},
	}
)

func stack(parts ...[]Layer) []Layer {
	var s []Layer
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}

const (
	toNoTag = "Bob <sip:bob@example.com>"
	toTag   = "Bob <sip:bob@example.com>;tag=a6c85cf"
)

// sessionFrames are the first packets of every class in every
// encapsulation: the rows that must be classified as sessions.
func sessionFrames() []frameCase {
	var cases []frameCase
	for l2name, l2 := range l2Stacks {
		for _, code := range []struct {
			code  uint8
			class cac.Class
		}{{PADI, cac.PPPoEPADI}, {PADR, cac.PPPoEPADR}} {
			cases = append(cases, frameCase{
				name:  l2name + "/" + code.class.String(),
				frame: Frame(stack(l2, []Layer{PPPoE{Code: code.code}})...),
				want:  sess(code.class),
			})
		}
		for ipName, ip := range ipStacks {
			prefix := l2name + "/" + ipName + "/"
			for _, l := range []struct {
				ver   uint8
				msg   uint16
				class cac.Class
			}{{2, SCCRQ, cac.L2TPSCCRQ}, {2, ICRQ, cac.L2TPICRQ}, {3, SCCRQ, cac.L2TPSCCRQ}, {3, ICRQ, cac.L2TPICRQ}} {
				cases = append(cases, frameCase{
					name:  prefix + l.class.String() + "-v" + string('0'+rune(l.ver)),
					frame: Frame(stack(l2, ip, []Layer{UDP{Dst: 1701}, L2TP{Version: l.ver, MsgType: l.msg}})...),
					want:  sess(l.class),
				})
			}
			cases = append(cases,
				frameCase{prefix + "sip-invite", Frame(stack(l2, ip, []Layer{UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)})...), sess(cac.SIPInvite)},
				frameCase{prefix + "sip-options", Frame(stack(l2, ip, []Layer{UDP{Dst: 5060}, SIPRequest("OPTIONS", toNoTag)})...), sess(cac.SIPOptions)},
				frameCase{prefix + "sip-reinvite", Frame(stack(l2, ip, []Layer{UDP{Dst: 5060}, SIPRequest("INVITE", toTag)})...), inDialog},
			)
		}
	}
	return cases
}

// tags is an Ethernet header, n VLAN tags and inner.
func tags(n int, inner Layer) []Layer {
	layers := []Layer{Ether{}}
	for i := 0; i < n; i++ {
		layers = append(layers, VLAN{ID: uint16(100 + i)})
	}
	return append(layers, inner)
}

func v4udp(port uint16, payload Layer) []byte {
	return Frame(Ether{}, IPv4{}, UDP{Dst: port}, payload)
}

func v6udp(port uint16, payload Layer) []byte {
	return Frame(Ether{}, IPv6{}, UDP{Dst: port}, payload)
}

func sipTo(method, to string) []byte { return v4udp(5060, SIPRequest(method, to)) }

func sipHeaders(method string, headers ...string) []byte {
	return v4udp(5060, SIP{Method: method, Headers: headers})
}

// exts is n IPv6 extension headers of the kinds Linux takes in any number:
// a hop-by-hop header first, then destination options.
func exts(n int) []Ext {
	e := []Ext{{Proto: 0}}
	for len(e) < n {
		e = append(e, Ext{Proto: 60})
	}
	return e
}

// edgeFrames are the rows of docs/design.md "Classes" one by one, with their edges.
func edgeFrames() []frameCase {
	longHeader := "X-Long: " + strings.Repeat("a", 3000)
	manyHeaders := make([]string, 0, 70)
	for i := 0; i < 70; i++ {
		manyHeaders = append(manyHeaders, "X-N: 1")
	}
	return []frameCase{
		// Not watched: no counter moves.
		{"tcp", Frame(Ether{}, IPv4{}, TCP{Src: 40000, Dst: 5060}), unwatched},
		{"udp-other-port", v4udp(53, Raw("INVITE x")), unwatched},
		{"arp", Frame(Ether{Type: 0x0806}, Raw(make([]byte, 28))), unwatched},
		{"pppoe-session", Frame(Ether{Type: 0x8864}, Raw(make([]byte, 20))), unwatched},
		{"four-vlan-tags", Frame(tags(4, PPPoE{Code: PADI})...), unwatched},
		{"ipv4-bad-ihl", Frame(Ether{}, IPv4{IHL: 4}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), unwatched},
		{"ipv4-version-6", Frame(Ether{}, IPv4{Version: 6}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), unwatched},
		{"ipv6-5-ext", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 0}, {Proto: 60}, {Proto: 60}, {Proto: 60}, {Proto: 60}}}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), sess(cac.SIPInvite)},
		{"ipv6-8-ext", Frame(Ether{}, IPv6{Ext: exts(8)}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), sess(cac.SIPInvite)},
		// Past the bound nothing says where UDP is: malformed, never unseen.
		{"ipv6-9-ext", Frame(Ether{}, IPv6{Ext: exts(9)}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), malformed},
		{"ipv6-9-ext-other-port", Frame(Ether{}, IPv6{Ext: exts(9)}, UDP{Dst: 53}, Raw("query")), malformed},
		{"ipv4-fragment-tcp", Frame(Ether{}, IPv4{FragOff: 100}, TCP{}), unwatched},
		{"sip-source-port-only", Frame(Ether{}, IPv4{}, UDP{Src: 5060, Dst: 40000}, SIPRequest("INVITE", toNoTag)), unwatched},

		// Fragments.
		{"ipv4-non-first-fragment", Frame(Ether{}, IPv4{FragOff: 185, Proto: 17}, Raw("tail of a datagram")), fragment},
		{"ipv6-non-first-fragment", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, FragOff: 185}}, Next: 17}, Raw("tail of a datagram")), fragment},

		// PPPoE.
		{"pppoe-pado", Frame(Ether{}, PPPoE{Code: PADO}), other},
		{"pppoe-padt", Frame(Ether{}, PPPoE{Code: PADT, Session: 7}), other},
		{"pppoe-bad-version", Frame(Ether{}, PPPoE{VerType: 0x21, Code: PADI}), malformed},
		{"pppoe-length-past-frame", Frame(Ether{}, PPPoE{Code: PADI, Length: 200}), malformed},
		// pppoe-server answers a PADI or PADR whatever its session ID.
		{"pppoe-padi-with-session", Frame(Ether{}, PPPoE{Code: PADI, Session: 1}), odd(sess(cac.PPPoEPADI))},
		{"pppoe-padr-with-session", Frame(Ether{}, VLAN{ID: 7}, PPPoE{Code: PADR, Session: 0xffff}), odd(sess(cac.PPPoEPADR))},
		{"pppoe-truncated", Frame(Ether{Type: 0x8863}, Raw{0x11, 0x09, 0}), malformed},
		{"pppoe-padi-broadcast", Frame(Ether{Broadcast: true}, PPPoE{Code: PADI}), sess(cac.PPPoEPADI)},

		// L2TP.
		{"l2tp-second-port", v4udp(1702, L2TP{MsgType: ICRQ}), sess(cac.L2TPICRQ)},
		{"l2tp-v6-icrq", v6udp(1701, L2TP{MsgType: ICRQ}), sess(cac.L2TPICRQ)},
		{"l2tp-sccrp", v4udp(1701, L2TP{MsgType: SCCRP}), other},
		{"l2tp-zlb", v4udp(1701, ZLB()), other},
		{"l2tp-data", v4udp(1701, Raw{0x40, 0x02, 0, 20, 0, 1, 0, 1}), other},
		{"l2f-version-1", v4udp(1701, L2TP{Flags: 0xc801, MsgType: SCCRQ}), other},
		{"l2tp-no-length-bit", v4udp(1701, L2TP{Flags: 0x8802, MsgType: SCCRQ}), malformed},
		{"l2tp-no-sequence-bit", v4udp(1701, L2TP{Flags: 0xc002, MsgType: SCCRQ}), malformed},
		{"l2tp-v2-offset-bit", v4udp(1701, L2TP{Flags: 0xca02, MsgType: SCCRQ}), malformed},
		{"l2tp-length-past-payload", v4udp(1701, L2TP{MsgType: SCCRQ, Length: 400}), malformed},
		{"l2tp-length-short", v4udp(1701, L2TP{MsgType: SCCRQ, Length: 16}), malformed},
		{"l2tp-first-avp-not-message-type", v4udp(1701, L2TP{MsgType: SCCRQ, Attr: 7}), malformed},
		{"l2tp-first-avp-vendor", v4udp(1701, L2TP{MsgType: SCCRQ, Vendor: 9}), malformed},
		{"l2tp-message-type-hidden", v4udp(1701, L2TP{MsgType: SCCRQ, Hidden: true}), malformed},
		{"l2tp-message-type-length", v4udp(1701, L2TP{MsgType: SCCRQ, AVPLen: 10}), malformed},
		{"l2tp-one-byte", v4udp(1701, Raw{0xc8}), malformed},
		{"l2tp-empty", v4udp(1701, Raw{}), malformed},

		// UDP and IP lengths on a watched port.
		{"udp-length-past-ip", Frame(Ether{}, IPv4{}, UDP{Dst: 5060, Len: 900}, SIPRequest("INVITE", toNoTag)), malformed},
		{"udp-length-short", Frame(Ether{}, IPv4{}, UDP{Dst: 5060, Len: 4}, SIPRequest("INVITE", toNoTag)), malformed},
		{"ipv4-total-past-frame", Frame(Ether{}, IPv4{TotLen: 1400}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), malformed},
		{"ipv6-payload-past-frame", Frame(Ether{}, IPv6{PayloadLen: 1400}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), malformed},
		{"ipv6-jumbo", Frame(Ether{}, IPv6{ZeroLen: true}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag)), malformed},
		{"ipv4-trailing-padding", append(Frame(Ether{}, IPv4{}, UDP{Dst: 1701}, L2TP{MsgType: ICRQ}), 0, 0, 0, 0), sess(cac.L2TPICRQ)},

		// SIP: methods, dialogs, header forms.
		{"sip-second-port", v4udp(5080, SIPRequest("INVITE", toNoTag)), sess(cac.SIPInvite)},
		{"sip-v6-invite", v6udp(5060, SIPRequest("INVITE", toNoTag)), sess(cac.SIPInvite)},
		{"sip-register", sipTo("REGISTER", toNoTag), sess(cac.SIPRegister)},
		// A registrar ignores a To tag: so does the filter.
		{"sip-register-tagged", sipTo("REGISTER", toTag), sess(cac.SIPRegister)},
		{"sip-register-lowercase", sipTo("register", toTag), odd(sess(cac.SIPRegister))},
		{"sip-subscribe", sipTo("SUBSCRIBE", toNoTag), sess(cac.SIPOther)},
		{"sip-message", sipTo("MESSAGE", toNoTag), sess(cac.SIPOther)},
		{"sip-cancel", sipTo("CANCEL", toNoTag), sess(cac.SIPOther)},
		{"sip-unknown-method", sipTo("FOO.BAR~1", toNoTag), sess(cac.SIPOther)},
		{"sip-bye", sipTo("BYE", toTag), inDialog},
		{"sip-ack-lowercase", sipTo("ack", toTag), inDialog}, // another method to a strict parser: not odd
		{"sip-response", v4udp(5060, Raw("SIP/2.0 200 OK\r\nTo: <sip:b@example.com>;tag=1\r\n\r\n")), other},
		{"sip-response-lowercase", v4udp(5060, Raw("sip/2.0 200 OK\r\nTo: <sip:b@example.com>\r\n\r\n")), other},
		{"sip-stun-binding", v4udp(5060, Raw("\x00\x01\x00\x00\x21\x12\xa4\x42abcdefghijkl")), other},
		{"sip-lowercase-method", sipTo("invite", toNoTag), odd(sess(cac.SIPInvite))},
		{"sip-mixed-case-method", sipTo("InViTe", toNoTag), odd(sess(cac.SIPInvite))},
		{"sip-lowercase-options", sipTo("options", toNoTag), odd(sess(cac.SIPOptions))},
		{"sip-invite-no-space", sipTo("INVITEX", toNoTag), sess(cac.SIPOther)},
		{"sip-leading-crlf", sipPrefixed("\r\n", "INVITE", toNoTag), odd(sess(cac.SIPInvite))},
		{"sip-leading-crlf-options", sipPrefixed("\r\n", "OPTIONS", toNoTag), odd(sess(cac.SIPOptions))},
		{"sip-leading-lf-in-dialog", sipPrefixed("\n\n", "INVITE", toTag), odd(inDialog)},
		{"sip-16-crlf-bytes", sipPrefixed(strings.Repeat("\r\n", 8), "INVITE", toNoTag), odd(sess(cac.SIPInvite))},
		{"sip-17-crlf-bytes", sipPrefixed("\n"+strings.Repeat("\r\n", 8), "INVITE", toNoTag), malformed},
		{"sip-keepalive", v4udp(5060, Raw("\r\n\r\n")), other},
		{"sip-keepalive-16", v4udp(5060, Raw(strings.Repeat("\r\n", 8))), other},
		{"sip-empty", v4udp(5060, Raw{}), other},
		{"sip-in-dialog-options", sipTo("OPTIONS", toTag), inDialog},
		{"sip-compact-to", sipHeaders("INVITE", "Via: x", "t: <sip:b@example.com>;tag=9"), inDialog},
		{"sip-compact-to-no-tag", sipHeaders("INVITE", "Via: x", "t: <sip:b@example.com>"), sess(cac.SIPInvite)},
		{"sip-uppercase-to", sipHeaders("INVITE", "TO: <sip:b@example.com>;TAG=9"), inDialog},
		{"sip-space-before-colon", sipHeaders("INVITE", "To  : <sip:b@example.com>;tag=9"), inDialog},
		{"sip-space-around-semicolon", sipHeaders("INVITE", "To: <sip:b@example.com> ; tag = 9"), inDialog},
		{"sip-tab-around-semicolon", sipHeaders("INVITE", "To: <sip:b@example.com>\t;\ttag\t=\t9"), inDialog},
		{"sip-tag-in-uri-only", sipHeaders("INVITE", "To: <sip:b@example.com;tag=9>"), sess(cac.SIPInvite)},
		{"sip-tag-in-display-name", sipHeaders("INVITE", `To: "x;tag=1" <sip:b@example.com>`), sess(cac.SIPInvite)},
		{"sip-escaped-quote-in-name", sipHeaders("INVITE", `To: "x\";tag=1" <sip:b@example.com>`), sess(cac.SIPInvite)},
		{"sip-tag-after-quoted-name", sipHeaders("INVITE", `To: "a\"b" <sip:b@example.com>;tag=7`), inDialog},
		{"sip-bare-uri-tag", sipHeaders("INVITE", "To: sip:b@example.com;tag=9"), inDialog},
		{"sip-empty-tag", sipHeaders("INVITE", "To: <sip:b@example.com>;tag="), sess(cac.SIPInvite)},
		{"sip-other-param", sipHeaders("INVITE", "To: <sip:b@example.com>;tagx=9"), sess(cac.SIPInvite)},
		{"sip-folded-to", sipHeaders("INVITE", "To: <sip:b@example.com>\r\n ;tag=9"), inDialog},
		{"sip-tag-on-next-header", sipHeaders("INVITE", "To: <sip:b@example.com>", ";tag=9"), sess(cac.SIPInvite)},
		{"sip-token-header", sipHeaders("INVITE", "Tokens: ;tag=9", "To: <sip:b@example.com>"), sess(cac.SIPInvite)},
		{"sip-timestamp-before-to", sipHeaders("INVITE", "Timestamp: 54", "To: <sip:b@example.com>;tag=2"), inDialog},
		{"sip-from-tag-only", sipHeaders("INVITE", "From: <sip:a@example.com>;tag=1", "To: <sip:b@example.com>"), sess(cac.SIPInvite)},
		// Several To headers: servers read the first or the last, so one
		// without a tag makes the request a new dialog.
		{"sip-first-to-untagged", sipHeaders("INVITE", "To: <sip:b@example.com>", "To: <sip:b@example.com>;tag=1"), sess(cac.SIPInvite)},
		{"sip-last-to-untagged", sipHeaders("INVITE", "To: <sip:b@example.com>;tag=1", "Via: x", "t: <sip:b@example.com>"), odd(sess(cac.SIPInvite))},
		{"sip-two-to-tagged", sipHeaders("INVITE", "To: <sip:b@example.com>;tag=1", "To: <sip:b@example.com>;tag=2"), odd(inDialog)},
		{"sip-lf-line-ends", v4udp(5060, SIP{Method: "INVITE", Headers: []string{"Via: x", "To: <sip:b@x>;tag=1"}, LF: true}), inDialog},
		// No To header in sight: a new dialog, charged, never waved through.
		{"sip-no-to", sipHeaders("INVITE", "Via: x", "From: <sip:a@example.com>;tag=1"), sess(cac.SIPInvite)},
		{"sip-to-in-body-only", v4udp(5060, SIP{Method: "INVITE", Headers: []string{"Via: x"}, Body: "To: <sip:b@x>;tag=1\r\n"}), sess(cac.SIPInvite)},
		{"sip-request-line-only", v4udp(5060, Raw("INVITE sip:b@example.com SIP/2.0")), sess(cac.SIPInvite)},
		{"sip-5-spaces-before-colon", sipHeaders("INVITE", "To     : <sip:b@example.com>;tag=9"), sess(cac.SIPInvite)},
		{"sip-5-spaces-before-tag", sipHeaders("INVITE", "To: <sip:b@example.com>;     tag=9"), sess(cac.SIPInvite)},

		// First fragments are classified on what they hold.
		{"sip-first-fragment-to-later", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE sip:b@x SIP/2.0\r\nVia: x\r\n")), sess(cac.SIPInvite)},
		// A later fragment may hold another To: only the blank line ends it.
		{"sip-first-fragment-tagged", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, MF: true}}}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE sip:b@x SIP/2.0\r\nTo: <sip:b@x>;tag=5\r\nVia: x")), sess(cac.SIPInvite)},
		{"sip-first-fragment-tagged-whole-headers", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, MF: true}}}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE sip:b@x SIP/2.0\r\nTo: <sip:b@x>;tag=5\r\n\r\nv=0")), inDialog},
		{"sip-first-fragment-crlf-only", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("\r\n\r\nINV")), malformed},
		{"sip-first-fragment-too-short", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE")), malformed},
		{"sip-first-fragment-empty", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}), malformed},
		{"l2tp-first-fragment", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 1701, Len: 1800}, L2TP{MsgType: SCCRQ, Length: 1792}), sess(cac.L2TPSCCRQ)},
		{"l2tp-first-fragment-too-short", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 1701, Len: 1800}, Raw{0xc8, 0x02, 7, 0, 0, 0, 0, 0}), malformed},
		{"ipv6-non-first-fragment-dstopts", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, FragOff: 10}}, Next: 60}, Raw("tail of a datagram")), fragment},
		{"sip-to-after-long-header", sipHeaders("INVITE", longHeader, "To: <sip:b@example.com>;tag=1"), sess(cac.SIPInvite)},
		{"sip-to-after-64-lines", sipHeaders("INVITE", append(manyHeaders, "To: <sip:b@example.com>;tag=1")...), sess(cac.SIPInvite)},
		{"sip-tag-past-to-budget", sipHeaders("INVITE", "To: <sip:"+strings.Repeat("b", 300)+"@example.com>;tag=1"), sess(cac.SIPInvite)},
	}
}
