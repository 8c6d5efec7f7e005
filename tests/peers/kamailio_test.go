package peers

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The receiver differential: Kamailio, a real SIP server, sits behind the
// filter, and every request it handles must have been charged to some
// limit. A form of request that Kamailio takes for a new request but the
// filter waves through uncharged (another spelling of the method, a
// stray CRLF, more extension headers than the filter walks, a fragment
// too short to classify) is a hole a flood could pour through; the test
// finds it by counting, for each form, what Kamailio logged against what
// the filter's counters charged.

// The bed's addresses, from TEST-NET-2 and the IPv6 documentation prefix,
// only ever on the veth of the test's namespaces. Each case sends from a
// source of its own, b.source(i).
const (
	kamBoxV4  = "198.51.100.1"
	kamBoxV6  = "2001:db8:5060::1"
	kamPeerV4 = "198.51.100.2"
	kamPeerV6 = "2001:db8:5060::2"
)

// kamailioClasses holds every class that charges a SIP request to one
// call at once and one a second, for the class and for each source.
const kamailioClasses = `classes:
  sip-invite:   {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
  sip-options:  {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
  sip-register: {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
  sip-other:    {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
  sip-indialog: {per-source: {cps: 1, burst: 1}}
  malformed:    {cps: 1, burst: 1, per-source: {cps: 1, burst: 1}}
`

// chargingClasses are the classes a request can be charged to: the
// admitted counts, summed over them, must rise by at least what Kamailio
// handled.
var chargingClasses = []string{"sip-invite", "sip-options", "sip-register", "sip-other", "sip-indialog", "malformed"}

// kamBurst is how many requests of each form go out at once.
const kamBurst = 50

// kamRefill is the pause between two cases' bursts, over the one second
// in which a bucket of one refills.
const kamRefill = 1200 * time.Millisecond

// kamBed is the testbed with Kamailio in the box on both addresses and the
// filter in front of it.
type kamBed struct {
	*harness.Testbed
	k               *testenv.Kamailio
	boxMAC, peerMAC [6]byte
	lastBurst       time.Time
}

func newKamBed(t *testing.T, classes string) *kamBed {
	tb := harness.NewTestbed(t)
	// Kamailio first: its probes stay in the box and spend no token.
	b := kamBox(t, tb)
	cfg := harness.WriteConfig(t, harness.E2eConfig+classes)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	return b
}

// kamBox is the kamBed of a testbed: Kamailio in the box on both
// addresses, the filter not yet attached.
func kamBox(t *testing.T, tb *harness.Testbed) *kamBed {
	testenv.Addr(t, tb.Box, tb.BoxIface, kamBoxV4+"/24")
	testenv.Addr(t, tb.Box, tb.BoxIface, kamBoxV6+"/64")
	testenv.Addr(t, tb.Peer, tb.PeerIfc, kamPeerV4+"/24")
	testenv.Addr(t, tb.Peer, tb.PeerIfc, kamPeerV6+"/64")
	b := &kamBed{Testbed: tb,
		boxMAC:  testenv.HardwareAddr(t, tb.Box, tb.BoxIface),
		peerMAC: testenv.HardwareAddr(t, tb.Peer, tb.PeerIfc)}
	b.k = testenv.StartKamailio(t, tb.Box, kamBoxV4, kamBoxV6)
	return b
}

// source is case i's source address of family v6 (or IPv4), put on the
// peer's side of the veth so that Kamailio's answers find it.
func (b *kamBed) source(t *testing.T, i int, v6 bool) netip.Addr {
	a := netip.MustParseAddr(fmt.Sprintf("198.51.100.%d", 10+i))
	if v6 {
		a = netip.MustParseAddr(fmt.Sprintf("2001:db8:5060::%x", 0x10+i))
	}
	testenv.Addr(t, b.Peer, b.PeerIfc, netip.PrefixFrom(a, a.BitLen()).String())
	return a
}

// udpFrame is a UDP datagram from src to the box's address of its family,
// port 5060, with its checksum (which IPv6 requires), behind ext.
func (b *kamBed) udpFrame(src netip.Addr, ext []Ext, payload string) []byte {
	dst := netip.MustParseAddr(kamBoxV4)
	if src.Is6() {
		dst = netip.MustParseAddr(kamBoxV6)
	}
	udp := udpWithSum(src, dst, 5062, 5060, []byte(payload))
	eth := Ether{Src: b.peerMAC, Dst: b.boxMAC}
	if src.Is6() {
		return Frame(eth, IPv6{Src: src, Dst: dst, Ext: ext, Next: 17}, udp)
	}
	return Frame(eth, IPv4{Src: src, Dst: dst, Proto: 17}, udp)
}

// fragments is the same datagram over IPv4 in two fragments of
// identification id, the first holding the UDP header and first bytes of
// the payload (a multiple of 8).
func (b *kamBed) fragments(src netip.Addr, id uint16, first int, payload string) [][]byte {
	dst := netip.MustParseAddr(kamBoxV4)
	udp := udpWithSum(src, dst, 5062, 5060, []byte(payload))
	eth := Ether{Src: b.peerMAC, Dst: b.boxMAC}
	cut := 8 + first
	return [][]byte{
		Frame(eth, IPv4{Src: src, Dst: dst, Proto: 17, ID: id, MF: true}, udp[:cut]),
		Frame(eth, IPv4{Src: src, Dst: dst, Proto: 17, ID: id, FragOff: uint16(cut / 8)}, udp[cut:]),
	}
}

// udpWithSum is a UDP header and payload with the checksum over the
// pseudo-header of src and dst.
func udpWithSum(src, dst netip.Addr, sport, dport uint16, payload []byte) Raw {
	n := 8 + len(payload)
	u := binary.BigEndian.AppendUint16(nil, sport)
	u = binary.BigEndian.AppendUint16(u, dport)
	u = binary.BigEndian.AppendUint16(u, uint16(n))
	u = append(u, 0, 0)
	u = append(u, payload...)
	pseudo := append(src.AsSlice(), dst.AsSlice()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(n))
	pseudo = append(pseudo, 0, 0, 0, 17)
	c := harness.InetChecksum(pseudo, u)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], c)
	return u
}

// charged is the admitted count summed over chargingClasses, and the view
// it came from.
func (b *kamBed) charged(t *testing.T) (uint64, maps.StatsView) {
	v := b.Stats(t)
	var n uint64
	for _, c := range chargingClasses {
		n += v.Classes[c].Admitted
	}
	return n, v
}

// settle waits until Kamailio's count of Call-IDs starting with prefix
// has not changed for 300 ms (3 s at most), and returns it.
func (b *kamBed) settle(prefix string) int {
	n, since := b.k.Count(prefix), time.Now()
	testenv.Poll(3*time.Second, 50*time.Millisecond, func() bool {
		if m := b.k.Count(prefix); m != n {
			n, since = m, time.Now()
			return false
		}
		return time.Since(since) >= 300*time.Millisecond
	})
	return n
}

// sipText joins a request line, headers and a body into a message; a
// {len} in a header becomes the body's length.
func sipText(line string, headers []string, body string) string {
	h := strings.ReplaceAll(strings.Join(headers, "\r\n"), "{len}", fmt.Sprint(len(body)))
	return line + "\r\n" + h + "\r\n\r\n" + body
}

// kamHeaders are the headers of a request of method from src: a new
// dialog (no To tag), its Call-ID callID.
func kamHeaders(method string, src netip.Addr, callID string) []string {
	return []string{
		"Via: SIP/2.0/UDP " + netip.AddrPortFrom(src, 5062).String() + ";branch=z9hG4bK-" + callID,
		"Max-Forwards: 70",
		"To: Bob <sip:bob@example.com>",
		"From: Alice <sip:alice@example.net>;tag=" + callID,
		"Call-ID: " + callID,
		"CSeq: 1 " + method,
		"Contact: <sip:alice@" + netip.AddrPortFrom(src, 5062).String() + ">",
		"Content-Length: {len}",
	}
}

// kamRequest is a request of the usual shape, method spelt as given.
func kamRequest(method string, src netip.Addr, callID string) string {
	return sipText(method+" sip:bob@example.com SIP/2.0", kamHeaders(method, src, callID), "")
}

// replaceHeader returns headers with the one starting with name replaced by
// with (several lines for several headers).
func replaceHeader(headers []string, name string, with ...string) []string {
	var out []string
	for _, h := range headers {
		if strings.HasPrefix(h, name) {
			out = append(out, with...)
		} else {
			out = append(out, h)
		}
	}
	return out
}

// kamCase is one form of request, sent kamBurst times.
type kamCase struct {
	name string
	v6   bool
	// inDialog: the request claims a dialog, so the sip-indialog
	// allowance adds to the limit.
	inDialog bool
	// frames is request i, Call-ID callID, from src: one or more frames.
	frames func(b *kamBed, src netip.Addr, i int, callID string) [][]byte
	// class, when set, is the class every request Kamailio handled must
	// have been charged to: the one Kamailio acts on.
	class string
}

// oneFrame is a case of one frame carrying msg(src, callID).
func oneFrame(msg func(src netip.Addr, callID string) string) func(*kamBed, netip.Addr, int, string) [][]byte {
	return func(b *kamBed, src netip.Addr, _ int, callID string) [][]byte {
		return [][]byte{b.udpFrame(src, nil, msg(src, callID))}
	}
}

func kamCases() []kamCase {
	cases := []kamCase{
		{name: "invite", frames: oneFrame(func(s netip.Addr, id string) string { return kamRequest("INVITE", s, id) })},
		{name: "invite-lower", frames: oneFrame(func(s netip.Addr, id string) string { return kamRequest("invite", s, id) })},
		{name: "invite-mixed", frames: oneFrame(func(s netip.Addr, id string) string { return kamRequest("InViTe", s, id) })},
		{name: "crlf-invite", frames: oneFrame(func(s netip.Addr, id string) string { return "\r\n" + kamRequest("INVITE", s, id) })},
		{name: "crlf-options", frames: oneFrame(func(s netip.Addr, id string) string { return "\r\n" + kamRequest("OPTIONS", s, id) })},
		{name: "folded", frames: oneFrame(func(s netip.Addr, id string) string {
			h := replaceHeader(kamHeaders("INVITE", s, id), "To:", "To:\r\n  Bob\r\n\t<sip:bob@example.com>",
				"Subject: a call whose subject\r\n runs over two lines")
			return sipText("INVITE sip:bob@example.com SIP/2.0", h, "")
		})},
		{name: "compact", frames: oneFrame(func(s netip.Addr, id string) string {
			hp := netip.AddrPortFrom(s, 5062).String()
			return sipText("INVITE sip:bob@example.com SIP/2.0", []string{
				"v: SIP/2.0/UDP " + hp + ";branch=z9hG4bK-" + id, "Max-Forwards: 70",
				"t: Bob <sip:bob@example.com>", "f: <sip:alice@example.net>;tag=" + id, "i: " + id,
				"CSeq: 1 INVITE", "m: <sip:alice@" + hp + ">", "l: {len}"}, "")
		})},
		{name: "to-tag", inDialog: true, frames: oneFrame(func(s netip.Addr, id string) string {
			h := replaceHeader(kamHeaders("INVITE", s, id), "To:", "To: Bob <sip:bob@example.com>;tag=invented-"+id)
			return sipText("INVITE sip:bob@example.com SIP/2.0", h, "")
		})},
		// The untagged To last, after every header Kamailio needs: one
		// before the Call-ID makes its parser drop the request.
		{name: "two-to", frames: oneFrame(func(s netip.Addr, id string) string {
			h := replaceHeader(kamHeaders("INVITE", s, id), "To:", "To: Bob <sip:bob@example.com>;tag=first-"+id)
			return sipText("INVITE sip:bob@example.com SIP/2.0", append(h, "To: Bob <sip:bob@example.com>"), "")
		})},
	}
	// Hop-by-hop first, where IPv6 wants it, then destination options:
	// Linux takes any number of those.
	for n := 1; n <= 8; n++ {
		ext := []Ext{{Proto: 0}}
		for len(ext) < n {
			ext = append(ext, Ext{Proto: 60})
		}
		cases = append(cases, kamCase{name: fmt.Sprintf("v6-ext%d", n), v6: true,
			frames: func(b *kamBed, src netip.Addr, _ int, id string) [][]byte {
				return [][]byte{b.udpFrame(src, ext, kamRequest("INVITE", src, id))}
			}})
	}
	// A first fragment with the UDP header and no more (too short to
	// show a method), or with 8 bytes of the request: the kernel
	// reassembles both, so Kamailio gets the whole INVITE.
	for _, first := range []int{0, 8} {
		cases = append(cases, kamCase{name: fmt.Sprintf("frag-first%d", first),
			frames: func(b *kamBed, src netip.Addr, i int, id string) [][]byte {
				return b.fragments(src, uint16(0x4000+i), first, kamRequest("INVITE", src, id))
			}})
	}
	for _, m := range []string{"REGISTER", "SUBSCRIBE", "MESSAGE"} {
		cases = append(cases, kamCase{name: strings.ToLower(m), frames: oneFrame(func(s netip.Addr, id string) string {
			h, body := kamHeaders(m, s, id), ""
			switch m {
			case "REGISTER":
				h = append(h, "Expires: 600")
			case "SUBSCRIBE":
				h = append(h, "Event: presence", "Expires: 600")
			case "MESSAGE":
				h, body = append(h, "Content-Type: text/plain"), "Is the filter in front of you?"
			}
			return sipText(m+" sip:bob@example.com SIP/2.0", h, body)
		})})
	}
	return append(cases, attackCases()...)
}

// kamRow is one case's figures.
type kamRow struct {
	name                string
	sent, logged, limit int
	charged, refused    uint64 // admitted and rejected by the charging classes
	elapsed             time.Duration
	other               uint64 // passed uncharged as other traffic
}

// TestKamailioReceiver sends kamBurst requests of each form through the
// filter to Kamailio under limits of one call a second, and checks that
// Kamailio handled no more than the limits allow and that every request it
// handled was charged. Then the corpus, one message at a time.
func TestKamailioReceiver(t *testing.T) {
	b := newKamBed(t, kamailioClasses)
	var rows []kamRow
	for i, c := range kamCases() {
		t.Run(c.name, func(t *testing.T) {
			rows = append(rows, b.burst(t, i, c))
		})
	}
	t.Run("corpus", func(t *testing.T) { b.corpus(t) })
	var tab strings.Builder
	fmt.Fprintf(&tab, "%-14s %5s %7s %8s %6s %8s %9s\n", "case", "sent", "handled", "charged", "limit", "refused", "uncharged")
	for _, r := range rows {
		fmt.Fprintf(&tab, "%-14s %5d %7d %8d %6d %8d %9d\n", r.name, r.sent, r.logged, r.charged, r.limit, r.refused, r.other)
	}
	t.Logf("requests Kamailio handled against what the filter charged and refused (uncharged: passed as other traffic):\n%s", tab.String())
}

// burst runs case c, the i-th, from a source of its own.
func (b *kamBed) burst(t *testing.T, i int, c kamCase) kamRow {
	if wait := kamRefill - time.Since(b.lastBurst); wait > 0 {
		time.Sleep(wait)
	}
	src := b.source(t, i, c.v6)
	prefix := c.name + "."
	var frames [][]byte
	for j := range kamBurst {
		frames = append(frames, c.frames(b, src, j, fmt.Sprintf("%s%s-%02d", prefix, testenv.Unique(""), j))...)
	}
	before, bv := b.charged(t)
	start := time.Now()
	testenv.Send(t, b.Peer, b.PeerIfc, frames)
	elapsed := time.Since(start)
	b.lastBurst = time.Now()
	logged := b.settle(prefix)
	after, av := b.charged(t)

	// burst 1 + 1 a second, and one more for a second boundary
	limit := 1 + int(elapsed.Seconds()) + 1
	if c.inDialog {
		limit *= 2 // sip-indialog's per-source bucket, of the same shape
	}
	r := kamRow{name: c.name, sent: kamBurst, logged: logged, limit: limit, charged: after - before, elapsed: elapsed,
		other: av.PassedOther - bv.PassedOther}
	var byClass []string
	for _, cl := range chargingClasses {
		r.refused += av.Classes[cl].Rejected - bv.Classes[cl].Rejected
		if d := av.Classes[cl].Admitted - bv.Classes[cl].Admitted; d > 0 {
			byClass = append(byClass, fmt.Sprintf("%s +%d", cl, d))
		}
	}
	sort.Strings(byClass)
	t.Logf("sent %d in %v from %s; Kamailio handled %d (limit %d); charged %d [%s], refused %d; passed uncharged %d",
		kamBurst, elapsed.Round(time.Millisecond), src, logged, limit, r.charged, strings.Join(byClass, ", "), r.refused, r.other)
	if logged == 0 {
		t.Errorf("Kamailio handled none of the %d: this form never reached it, so nothing was compared", kamBurst)
	}
	if logged > limit {
		t.Errorf("Kamailio handled %d of %d, more than the limits allow (%d)", logged, kamBurst, limit)
	}
	if uint64(logged) > r.charged {
		t.Errorf("Kamailio handled %d, the filter charged %d: %d requests went through uncharged", logged, r.charged, uint64(logged)-r.charged)
	}
	if c.class != "" {
		if in := av.Classes[c.class].Admitted - bv.Classes[c.class].Admitted; in < uint64(logged) {
			t.Errorf("Kamailio handled %d, the filter charged %d of them to %s, the class Kamailio acts on", logged, in, c.class)
		}
	}
	return r
}
