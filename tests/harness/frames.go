package harness

import (
	"strings"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
)

type FrameCase struct {
	Name  string
	Frame []byte
	Want  classify.Result
}

func Sess(c cac.Class) classify.Result { return classify.Result{Kind: cac.Session, Class: c} }

// Odd is r for a SIP request in a form stricter parsers miss.
func Odd(r classify.Result) classify.Result {
	r.Odd = true
	return r
}

// StrangerDialog is an in-dialog request of a dialog no INVITE of
// internal/pkt opened: its Call-ID is another.
func StrangerDialog(method string) SIP {
	s := SIPRequest(method, ToTag)
	for i, h := range s.Headers {
		if strings.HasPrefix(h, "Call-ID:") {
			s.Headers[i] = "Call-ID: not-admitted@192.0.2.9"
		}
	}
	return s
}

// SipPrefixed is a request with bytes before its request line.
func SipPrefixed(prefix, method, to string) []byte {
	s := SIPRequest(method, to)
	s.Prefix = prefix
	return V4udp(5060, s)
}

var (
	Unwatched = classify.Result{Kind: cac.Unwatched}
	Other     = classify.Result{Kind: cac.Other}
	InDialog  = classify.Result{Kind: cac.InDialog}
	Fragment  = classify.Result{Kind: cac.Fragment}
	Malformed = classify.Result{Kind: cac.Malformed}
)

// Encapsulations that every class is sent in.
var (
	L2Stacks = map[string][]Layer{
		"untagged": {Ether{}},
		"dot1q":    {Ether{}, VLAN{ID: 100}},
		"qinq":     {Ether{}, VLAN{TPID: 0x88a8, ID: 10}, VLAN{ID: 200}},
		"qinq9100": {Ether{}, VLAN{TPID: 0x9100, ID: 11}, VLAN{ID: 201}},
		// A third tag: a pppoe-server on a stacked VLAN device answers it.
		"three-tags": {Ether{}, VLAN{TPID: 0x88a8, ID: 12}, VLAN{ID: 202}, VLAN{ID: 302}},
	}
	IpStacks = map[string][]Layer{
		"ipv4":                {IPv4{}},
		"ipv4-options":        {IPv4{Options: []byte{0x94, 0x04, 0, 0, 0x01, 0x01, 0x01, 0x00}}}, // router alert, NOPs
		"ipv4-first-fragment": {IPv4{MF: true}},
		"ipv6":                {IPv6{}},
		"ipv6-4ext":           {IPv6{Ext: []Ext{{Proto: 0}, {Proto: 43, Len: 1}, {Proto: 60}, {Proto: 44}}}},
		"ipv6-first-fragment": {IPv6{Ext: []Ext{{Proto: 44, MF: true}}}},
	}
)

func Stack(parts ...[]Layer) []Layer {
	var s []Layer
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}

const (
	ToNoTag = "Bob <sip:bob@example.com>"
	ToTag   = "Bob <sip:bob@example.com>;tag=a6c85cf"
)

// SessionFrames are the first packets of every class in every
// encapsulation: the rows that must be classified as sessions.
func SessionFrames() []FrameCase {
	var cases []FrameCase
	for l2name, l2 := range L2Stacks {
		for _, code := range []struct {
			code  uint8
			class cac.Class
		}{{PADI, cac.PPPoEPADI}, {PADR, cac.PPPoEPADR}} {
			cases = append(cases, FrameCase{
				Name:  l2name + "/" + code.class.String(),
				Frame: Frame(Stack(l2, []Layer{PPPoE{Code: code.code}})...),
				Want:  Sess(code.class),
			})
		}
		for ipName, ip := range IpStacks {
			prefix := l2name + "/" + ipName + "/"
			for _, l := range []struct {
				ver   uint8
				msg   uint16
				class cac.Class
			}{{2, SCCRQ, cac.L2TPSCCRQ}, {2, ICRQ, cac.L2TPICRQ}, {3, SCCRQ, cac.L2TPSCCRQ}, {3, ICRQ, cac.L2TPICRQ}} {
				cases = append(cases, FrameCase{
					Name:  prefix + l.class.String() + "-v" + string('0'+rune(l.ver)),
					Frame: Frame(Stack(l2, ip, []Layer{UDP{Dst: 1701}, L2TP{Version: l.ver, MsgType: l.msg}})...),
					Want:  Sess(l.class),
				})
			}
			cases = append(cases,
				FrameCase{prefix + "sip-invite", Frame(Stack(l2, ip, []Layer{UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)})...), Sess(cac.SIPInvite)},
				FrameCase{prefix + "sip-options", Frame(Stack(l2, ip, []Layer{UDP{Dst: 5060}, SIPRequest("OPTIONS", ToNoTag)})...), Sess(cac.SIPOptions)},
				FrameCase{prefix + "sip-reinvite", Frame(Stack(l2, ip, []Layer{UDP{Dst: 5060}, SIPRequest("INVITE", ToTag)})...), InDialog},
			)
		}
	}
	return cases
}

// Tags is an Ethernet header, n VLAN tags and inner.
func Tags(n int, inner Layer) []Layer {
	layers := []Layer{Ether{}}
	for i := 0; i < n; i++ {
		layers = append(layers, VLAN{ID: uint16(100 + i)})
	}
	return append(layers, inner)
}

func V4udp(port uint16, payload Layer) []byte {
	return Frame(Ether{}, IPv4{}, UDP{Dst: port}, payload)
}

func V6udp(port uint16, payload Layer) []byte {
	return Frame(Ether{}, IPv6{}, UDP{Dst: port}, payload)
}

func SipTo(method, to string) []byte { return V4udp(5060, SIPRequest(method, to)) }

func SipHeaders(method string, headers ...string) []byte {
	return V4udp(5060, SIP{Method: method, Headers: headers})
}

// priorityTags is n VLAN tags of VID 0.
func priorityTags(n int) []Layer {
	var l []Layer
	for range n {
		l = append(l, VLAN{})
	}
	return l
}

// Exts is n IPv6 extension headers of the kinds Linux takes in any number:
// a hop-by-hop header first, then destination options.
func Exts(n int) []Ext {
	e := []Ext{{Proto: 0}}
	for len(e) < n {
		e = append(e, Ext{Proto: 60})
	}
	return e
}

// EdgeFrames are the rows of docs/design.md "Classes" one by one, with their edges.
func EdgeFrames() []FrameCase {
	longHeader := "X-Long: " + strings.Repeat("a", 3000)
	manyHeaders := make([]string, 0, 70)
	for i := 0; i < 70; i++ {
		manyHeaders = append(manyHeaders, "X-N: 1")
	}
	return []FrameCase{
		// Not watched: no counter moves.
		{"tcp", Frame(Ether{}, IPv4{}, TCP{Src: 40000, Dst: 5060}), Unwatched},
		{"udp-other-port", V4udp(53, Raw("INVITE x")), Unwatched},
		{"arp", Frame(Ether{Type: 0x0806}, Raw(make([]byte, 28))), Unwatched},
		{"pppoe-session", Frame(Ether{Type: 0x8864}, Raw(make([]byte, 20))), Unwatched},
		// Linux strips any number of priority tags: past the tags walked,
		// malformed, never unseen.
		{"four-vlan-tags", Frame(Tags(4, PPPoE{Code: PADI})...), Malformed},
		// Surplus leading priority tags are taken out, as Linux would.
		{"four-priority-tags-sip", Frame(Ether{}, VLAN{}, VLAN{}, VLAN{}, VLAN{}, IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"sixteen-priority-tags-sip", Frame(append(append([]Layer{Ether{}}, priorityTags(16)...), IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag))...), Sess(cac.SIPInvite)},
		{"seventeen-priority-tags-sip", Frame(append(append([]Layer{Ether{}}, priorityTags(17)...), IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag))...), Malformed},
		{"priority-then-three-vlans", Frame(Ether{}, VLAN{}, VLAN{ID: 7}, VLAN{ID: 8}, VLAN{ID: 9}, IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"vlan-then-priority-tags", Frame(Ether{}, VLAN{ID: 7}, VLAN{}, VLAN{}, VLAN{}, IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"three-priority-tags-sip", Frame(Ether{}, VLAN{}, VLAN{}, VLAN{}, IPv4{}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		// Linux reads a UDP length of 0 over IPv6 as the whole payload.
		{"ipv6-udp-length-0", Frame(Ether{}, IPv6{}, UDP{Dst: 5060, Len: -1}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"ipv4-udp-length-0", Frame(Ether{}, IPv4{}, UDP{Dst: 5060, Len: -1}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"ipv4-bad-ihl", Frame(Ether{}, IPv4{IHL: 4}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Unwatched},
		{"ipv4-version-6", Frame(Ether{}, IPv4{Version: 6}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Unwatched},
		{"ipv6-5-ext", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 0}, {Proto: 60}, {Proto: 60}, {Proto: 60}, {Proto: 60}}}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"ipv6-8-ext", Frame(Ether{}, IPv6{Ext: Exts(8)}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		// Past the bound nothing says where UDP is: malformed, never unseen.
		{"ipv6-9-ext", Frame(Ether{}, IPv6{Ext: Exts(9)}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"ipv6-16-ext", Frame(Ether{}, IPv6{Ext: Exts(16)}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"ipv6-17-ext", Frame(Ether{}, IPv6{Ext: Exts(17)}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"ipv6-17-ext-other-port", Frame(Ether{}, IPv6{Ext: Exts(17)}, UDP{Dst: 53}, Raw("query")), Malformed},
		{"ipv4-fragment-tcp", Frame(Ether{}, IPv4{FragOff: 100}, TCP{}), Unwatched},
		{"sip-source-port-only", Frame(Ether{}, IPv4{}, UDP{Src: 5060, Dst: 40000}, SIPRequest("INVITE", ToNoTag)), Unwatched},

		// Fragments.
		{"ipv4-non-first-fragment", Frame(Ether{}, IPv4{FragOff: 185, Proto: 17}, Raw("tail of a datagram")), Fragment},
		{"ipv6-non-first-fragment", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, FragOff: 185}}, Next: 17}, Raw("tail of a datagram")), Fragment},

		// PPPoE.
		{"pppoe-pado", Frame(Ether{}, PPPoE{Code: PADO}), Other},
		{"pppoe-padt", Frame(Ether{}, PPPoE{Code: PADT, Session: 7}), Other},
		{"pppoe-bad-version", Frame(Ether{}, PPPoE{VerType: 0x21, Code: PADI}), Malformed},
		{"pppoe-length-past-frame", Frame(Ether{}, PPPoE{Code: PADI, Length: 200}), Malformed},
		// pppoe-server answers a PADI or PADR whatever its session ID.
		{"pppoe-padi-with-session", Frame(Ether{}, PPPoE{Code: PADI, Session: 1}), Odd(Sess(cac.PPPoEPADI))},
		{"pppoe-padr-with-session", Frame(Ether{}, VLAN{ID: 7}, PPPoE{Code: PADR, Session: 0xffff}), Odd(Sess(cac.PPPoEPADR))},
		{"pppoe-truncated", Frame(Ether{Type: 0x8863}, Raw{0x11, 0x09, 0}), Malformed},
		{"pppoe-padi-broadcast", Frame(Ether{Broadcast: true}, PPPoE{Code: PADI}), Sess(cac.PPPoEPADI)},

		// L2TP.
		{"l2tp-second-port", V4udp(1702, L2TP{MsgType: ICRQ}), Sess(cac.L2TPICRQ)},
		{"l2tp-v6-icrq", V6udp(1701, L2TP{MsgType: ICRQ}), Sess(cac.L2TPICRQ)},
		{"l2tp-sccrp", V4udp(1701, L2TP{MsgType: SCCRP}), Other},
		{"l2tp-zlb", V4udp(1701, ZLB()), Other},
		{"l2tp-data", V4udp(1701, Raw{0x40, 0x02, 0, 20, 0, 1, 0, 1}), Other},
		{"l2f-version-1", V4udp(1701, L2TP{Flags: 0xc801, MsgType: SCCRQ}), Other},
		{"l2tp-no-length-bit", V4udp(1701, L2TP{Flags: 0x8802, MsgType: SCCRQ}), Malformed},
		{"l2tp-no-sequence-bit", V4udp(1701, L2TP{Flags: 0xc002, MsgType: SCCRQ}), Malformed},
		{"l2tp-v2-offset-bit", V4udp(1701, L2TP{Flags: 0xca02, MsgType: SCCRQ}), Malformed},
		{"l2tp-length-past-payload", V4udp(1701, L2TP{MsgType: SCCRQ, Length: 400}), Malformed},
		{"l2tp-length-short", V4udp(1701, L2TP{MsgType: SCCRQ, Length: 16}), Malformed},
		{"l2tp-first-avp-not-message-type", V4udp(1701, L2TP{MsgType: SCCRQ, Attr: 7}), Malformed},
		{"l2tp-first-avp-vendor", V4udp(1701, L2TP{MsgType: SCCRQ, Vendor: 9}), Malformed},
		{"l2tp-message-type-hidden", V4udp(1701, L2TP{MsgType: SCCRQ, Hidden: true}), Malformed},
		{"l2tp-message-type-length", V4udp(1701, L2TP{MsgType: SCCRQ, AVPLen: 10}), Malformed},
		{"l2tp-one-byte", V4udp(1701, Raw{0xc8}), Malformed},
		{"l2tp-empty", V4udp(1701, Raw{}), Malformed},

		// UDP and IP lengths on a watched port.
		{"udp-length-past-ip", Frame(Ether{}, IPv4{}, UDP{Dst: 5060, Len: 900}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"udp-length-short", Frame(Ether{}, IPv4{}, UDP{Dst: 5060, Len: 4}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"ipv4-total-past-frame", Frame(Ether{}, IPv4{TotLen: 1400}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"ipv6-payload-past-frame", Frame(Ether{}, IPv6{PayloadLen: 1400}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"ipv6-jumbo", Frame(Ether{}, IPv6{ZeroLen: true}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag)), Malformed},
		{"ipv4-trailing-padding", append(Frame(Ether{}, IPv4{}, UDP{Dst: 1701}, L2TP{MsgType: ICRQ}), 0, 0, 0, 0), Sess(cac.L2TPICRQ)},

		// SIP: methods, dialogs, header forms.
		{"sip-second-port", V4udp(5080, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"sip-v6-invite", V6udp(5060, SIPRequest("INVITE", ToNoTag)), Sess(cac.SIPInvite)},
		{"sip-register", SipTo("REGISTER", ToNoTag), Sess(cac.SIPRegister)},
		// A registrar ignores a To tag: so does the filter.
		{"sip-register-tagged", SipTo("REGISTER", ToTag), Sess(cac.SIPRegister)},
		{"sip-register-lowercase", SipTo("register", ToTag), Odd(Sess(cac.SIPRegister))},
		{"sip-subscribe", SipTo("SUBSCRIBE", ToNoTag), Sess(cac.SIPOther)},
		{"sip-message", SipTo("MESSAGE", ToNoTag), Sess(cac.SIPOther)},
		{"sip-cancel", SipTo("CANCEL", ToNoTag), Sess(cac.SIPOther)},
		{"sip-unknown-method", SipTo("FOO.BAR~1", ToNoTag), Sess(cac.SIPOther)},
		{"sip-bye", SipTo("BYE", ToTag), InDialog},
		{"sip-ack-lowercase", SipTo("ack", ToTag), InDialog}, // another method to a strict parser: not odd
		{"sip-response", V4udp(5060, Raw("SIP/2.0 200 OK\r\nTo: <sip:b@example.com>;tag=1\r\n\r\n")), Other},
		{"sip-response-lowercase", V4udp(5060, Raw("sip/2.0 200 OK\r\nTo: <sip:b@example.com>\r\n\r\n")), Other},
		{"sip-stun-binding", V4udp(5060, Raw("\x00\x01\x00\x00\x21\x12\xa4\x42abcdefghijkl")), Other},
		{"sip-lowercase-method", SipTo("invite", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-mixed-case-method", SipTo("InViTe", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-lowercase-options", SipTo("options", ToNoTag), Odd(Sess(cac.SIPOptions))},
		{"sip-invite-no-space", SipTo("INVITEX", ToNoTag), Sess(cac.SIPOther)},
		{"sip-leading-crlf", SipPrefixed("\r\n", "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-leading-crlf-options", SipPrefixed("\r\n", "OPTIONS", ToNoTag), Odd(Sess(cac.SIPOptions))},
		{"sip-leading-lf-in-dialog", SipPrefixed("\n\n", "INVITE", ToTag), Odd(InDialog)},
		{"sip-16-crlf-bytes", SipPrefixed(strings.Repeat("\r\n", 8), "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-17-crlf-bytes", SipPrefixed("\n"+strings.Repeat("\r\n", 8), "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		// Kamailio skips any run of SP, HT, NUL, CR and LF first.
		{"sip-leading-space", SipPrefixed(" ", "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-leading-tab", SipPrefixed("\t", "OPTIONS", ToNoTag), Odd(Sess(cac.SIPOptions))},
		{"sip-leading-nul", SipPrefixed("\x00", "REGISTER", ToNoTag), Odd(Sess(cac.SIPRegister))},
		{"sip-leading-mixed-1400", SipPrefixed(strings.Repeat(" \t\x00\r\n\r\n", 200), "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-leading-2049", SipPrefixed(strings.Repeat(" ", 2049), "INVITE", ToNoTag), Malformed},
		{"sip-leading-2048", SipPrefixed(strings.Repeat(" ", 2048), "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-leading-2047", SipPrefixed(strings.Repeat(" ", 2047), "INVITE", ToNoTag), Odd(Sess(cac.SIPInvite))},
		{"sip-leading-in-dialog", SipPrefixed("\x00 ", "BYE", ToTag), Odd(InDialog)},
		// Any other first line is a request to Kamailio: an unknown method.
		{"sip-leading-bom", SipPrefixed("\xef\xbb\xbf", "INVITE", ToNoTag), Odd(Sess(cac.SIPOther))},
		{"sip-leading-hash", SipPrefixed("#", "INVITE", ToNoTag), Odd(Sess(cac.SIPOther))},
		{"sip-invite-tab", V4udp(5060, Raw("INVITE\tsip:b@example.com SIP/2.0\r\nTo: <sip:b@example.com>\r\n\r\n")), Odd(Sess(cac.SIPInvite))},
		{"sip-options-tab", V4udp(5060, Raw("OPTIONS\tsip:b@example.com SIP/2.0\r\nTo: <sip:b@example.com>\r\n\r\n")), Odd(Sess(cac.SIPOptions))},
		{"sip-register-tab", V4udp(5060, Raw("register\tsip:example.com SIP/2.0\r\n\r\n")), Odd(Sess(cac.SIPRegister))},
		{"sip-binary-first-line", V4udp(5060, Raw("\x01\x02\x03\x04\x05\x06\x07\x08\x09")), Odd(Sess(cac.SIPOther))},
		{"sip-stun-bad-length", V4udp(5060, Raw("\x00\x01\x00\x04\x21\x12\xa4\x42abcdefghijkl")), Odd(Sess(cac.SIPOther))},
		{"sip-keepalive-nul", V4udp(5060, Raw("\x00\x00\x00\x00")), Other},
		{"sip-keepalive-spaces", V4udp(5060, Raw(" \t \r\n")), Other},
		{"sip-keepalive", V4udp(5060, Raw("\r\n\r\n")), Other},
		{"sip-keepalive-16", V4udp(5060, Raw(strings.Repeat("\r\n", 8))), Other},
		{"sip-empty", V4udp(5060, Raw{}), Other},
		{"sip-in-dialog-options", SipTo("OPTIONS", ToTag), InDialog},
		{"sip-compact-to", SipHeaders("INVITE", "Via: x", "t: <sip:b@example.com>;tag=9"), InDialog},
		{"sip-compact-to-no-tag", SipHeaders("INVITE", "Via: x", "t: <sip:b@example.com>"), Sess(cac.SIPInvite)},
		// A tag spelt other than ";tag=" is none to sipgo, which a server
		// behind the filter may be: the reading that charges wins.
		{"sip-uppercase-to", SipHeaders("INVITE", "TO: <sip:b@example.com>;tag=9"), InDialog},
		{"sip-uppercase-tag", SipHeaders("INVITE", "TO: <sip:b@example.com>;TAG=9"), Sess(cac.SIPInvite)},
		{"sip-space-before-colon", SipHeaders("INVITE", "To  : <sip:b@example.com>;tag=9"), InDialog},
		{"sip-space-around-semicolon", SipHeaders("INVITE", "To: <sip:b@example.com> ; tag = 9"), Sess(cac.SIPInvite)},
		{"sip-space-before-semicolon", SipHeaders("INVITE", "To: <sip:b@example.com> ;tag=9"), InDialog},
		{"sip-tab-around-semicolon", SipHeaders("INVITE", "To: <sip:b@example.com>\t;\ttag\t=\t9"), Sess(cac.SIPInvite)},
		{"sip-tab-after-equals", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=\t9"), InDialog},
		{"sip-tag-in-uri-only", SipHeaders("INVITE", "To: <sip:b@example.com;tag=9>"), Sess(cac.SIPInvite)},
		{"sip-tag-in-display-name", SipHeaders("INVITE", `To: "x;tag=1" <sip:b@example.com>`), Sess(cac.SIPInvite)},
		{"sip-escaped-quote-in-name", SipHeaders("INVITE", `To: "x\";tag=1" <sip:b@example.com>`), Sess(cac.SIPInvite)},
		{"sip-tag-after-quoted-name", SipHeaders("INVITE", `To: "a\"b" <sip:b@example.com>;tag=7`), InDialog},
		{"sip-bare-uri-tag", SipHeaders("INVITE", "To: sip:b@example.com;tag=9"), InDialog},
		{"sip-empty-tag", SipHeaders("INVITE", "To: <sip:b@example.com>;tag="), Sess(cac.SIPInvite)},
		// Kamailio keeps the last tag parameter and takes an empty one,
		// quoted or not, for none.
		{"sip-empty-quoted-tag", SipHeaders("INVITE", `To: <sip:b@example.com>;tag=""`), Sess(cac.SIPInvite)},
		{"sip-unclosed-quoted-tag", SipHeaders("INVITE", `To: <sip:b@example.com>;tag="`), Sess(cac.SIPInvite)},
		{"sip-space-quoted-tag", SipHeaders("INVITE", `To: <sip:b@example.com>;tag=" "`), InDialog},
		{"sip-quoted-tag", SipHeaders("INVITE", `To: <sip:b@example.com>;tag="abc"`), InDialog},
		{"sip-bare-tag-name", SipHeaders("INVITE", "To: <sip:b@example.com>;tag"), Sess(cac.SIPInvite)},
		{"sip-tag-then-empty-tag", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=abc;tag="), Sess(cac.SIPInvite)},
		{"sip-tag-then-bare-tag", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=abc;x=1;tag"), Sess(cac.SIPInvite)},
		{"sip-empty-tag-then-tag", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=;tag=abc"), InDialog},
		{"sip-tag-upper-spaced", SipHeaders("INVITE", "To: <sip:b@example.com>;TAG = abc"), Sess(cac.SIPInvite)},
		// sipgo splits a parameter at its last '=', and Kamailio drops
		// such a To: no tag either way.
		{"sip-tag-value-equals", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=a=b"), Sess(cac.SIPInvite)},
		{"sip-tag-quoted-equals", SipHeaders("INVITE", `To: <sip:b@example.com>;tag="a=b"`), Sess(cac.SIPInvite)},
		{"sip-tag-then-param", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=ab;x=1"), InDialog},
		{"sip-uri-param-before-tag", SipHeaders("INVITE", "To: <sip:b@example.com;transport=udp>;tag=ab"), InDialog},
		// More blanks before a colon than the filter skips: a To to
		// Kamailio that the filter does not read, so an untagged one.
		{"sip-wide-to-untagged-first", SipHeaders("INVITE", "To\t\t\t\t  : <sip:b@example.com>", "Call-ID: x", "To: <sip:b@example.com>;tag=2"), Sess(cac.SIPInvite)},
		{"sip-wide-tag-param", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=abc;     tag="), Sess(cac.SIPInvite)},
		{"sip-tag-past-bound-cleared", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=abc;x="+strings.Repeat("y", 300)+";tag="), Sess(cac.SIPInvite)},
		{"sip-other-param", SipHeaders("INVITE", "To: <sip:b@example.com>;tagx=9"), Sess(cac.SIPInvite)},
		{"sip-folded-to", SipHeaders("INVITE", "To: <sip:b@example.com>\r\n ;tag=9"), InDialog},
		{"sip-tag-on-next-header", SipHeaders("INVITE", "To: <sip:b@example.com>", ";tag=9"), Sess(cac.SIPInvite)},
		{"sip-token-header", SipHeaders("INVITE", "Tokens: ;tag=9", "To: <sip:b@example.com>"), Sess(cac.SIPInvite)},
		{"sip-timestamp-before-to", SipHeaders("INVITE", "Timestamp: 54", "To: <sip:b@example.com>;tag=2"), InDialog},
		{"sip-from-tag-only", SipHeaders("INVITE", "From: <sip:a@example.com>;tag=1", "To: <sip:b@example.com>"), Sess(cac.SIPInvite)},
		// Several To headers: servers read the first or the last, so one
		// without a tag makes the request a new dialog.
		{"sip-first-to-untagged", SipHeaders("INVITE", "To: <sip:b@example.com>", "To: <sip:b@example.com>;tag=1"), Sess(cac.SIPInvite)},
		{"sip-last-to-untagged", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=1", "Via: x", "t: <sip:b@example.com>"), Odd(Sess(cac.SIPInvite))},
		{"sip-two-to-tagged", SipHeaders("INVITE", "To: <sip:b@example.com>;tag=1", "To: <sip:b@example.com>;tag=2"), Odd(InDialog)},
		{"sip-lf-line-ends", V4udp(5060, SIP{Method: "INVITE", Headers: []string{"Via: x", "To: <sip:b@x>;tag=1"}, LF: true}), InDialog},
		// No To header in sight: a new dialog, charged, never waved through.
		{"sip-no-to", SipHeaders("INVITE", "Via: x", "From: <sip:a@example.com>;tag=1"), Sess(cac.SIPInvite)},
		{"sip-to-in-body-only", V4udp(5060, SIP{Method: "INVITE", Headers: []string{"Via: x"}, Body: "To: <sip:b@x>;tag=1\r\n"}), Sess(cac.SIPInvite)},
		{"sip-request-line-only", V4udp(5060, Raw("INVITE sip:b@example.com SIP/2.0")), Sess(cac.SIPInvite)},
		{"sip-5-spaces-before-colon", SipHeaders("INVITE", "To     : <sip:b@example.com>;tag=9"), Sess(cac.SIPInvite)},
		{"sip-5-spaces-before-tag", SipHeaders("INVITE", "To: <sip:b@example.com>;     tag=9"), Sess(cac.SIPInvite)},

		// First fragments are classified on what they hold.
		{"sip-first-fragment-to-later", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE sip:b@x SIP/2.0\r\nVia: x\r\n")), Sess(cac.SIPInvite)},
		// A later fragment may hold another To: only the blank line ends it.
		{"sip-first-fragment-tagged", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, MF: true}}}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE sip:b@x SIP/2.0\r\nTo: <sip:b@x>;tag=5\r\nVia: x")), Sess(cac.SIPInvite)},
		{"sip-first-fragment-tagged-whole-headers", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, MF: true}}}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE sip:b@x SIP/2.0\r\nTo: <sip:b@x>;tag=5\r\n\r\nv=0")), InDialog},
		{"sip-first-fragment-crlf-only", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("\r\n\r\nINV")), Malformed},
		{"sip-first-fragment-too-short", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("INVITE")), Malformed},
		// A first fragment shows a method only with the blank that ends it.
		{"sip-first-fragment-register-cut", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("REGISTER")), Malformed},
		{"sip-first-fragment-register-blank", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("register sip:x@y SIP/2.0")), Odd(Sess(cac.SIPRegister))},
		{"sip-first-fragment-short-invite", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw(" INVITE ")), Odd(Sess(cac.SIPInvite))},
		{"sip-first-fragment-short-ack", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("\r\n\r\nACK ")), Odd(Sess(cac.SIPOther))},
		{"sip-first-fragment-short-none", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}, Raw("\r\n\r\nINVI")), Malformed},
		{"sip-first-fragment-empty", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 5060, Len: 1800}), Malformed},
		{"l2tp-first-fragment", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 1701, Len: 1800}, L2TP{MsgType: SCCRQ, Length: 1792}), Sess(cac.L2TPSCCRQ)},
		{"l2tp-first-fragment-too-short", Frame(Ether{}, IPv4{MF: true}, UDP{Dst: 1701, Len: 1800}, Raw{0xc8, 0x02, 7, 0, 0, 0, 0, 0}), Malformed},
		{"ipv6-non-first-fragment-dstopts", Frame(Ether{}, IPv6{Ext: []Ext{{Proto: 44, FragOff: 10}}, Next: 60}, Raw("tail of a datagram")), Fragment},
		{"sip-to-after-long-header", SipHeaders("INVITE", longHeader, "To: <sip:b@example.com>;tag=1"), Sess(cac.SIPInvite)},
		{"sip-to-after-64-lines", SipHeaders("INVITE", append(manyHeaders, "To: <sip:b@example.com>;tag=1")...), Sess(cac.SIPInvite)},
		{"sip-tag-past-to-budget", SipHeaders("INVITE", "To: <sip:"+strings.Repeat("b", 300)+"@example.com>;tag=1"), Sess(cac.SIPInvite)},
	}
}
