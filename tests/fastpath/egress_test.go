package fastpath

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// egress is the real egress object, loaded beside a harness.FastPath's XDP object
// with its maps in place of its own, as the loader shares them, and run
// with BPF_PROG_TEST_RUN.
type egress struct {
	objs bpf.TcObjects
}

func newEgress(t testing.TB, f *harness.FastPath) *egress {
	t.Helper()
	spec, err := bpf.LoadTc()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables[bpf.TcVarUseTestClock].Set(uint8(1)); err != nil {
		t.Fatal(err)
	}
	replace, err := loader.EgressMaps(spec, &f.Objs.XdpMaps)
	if err != nil {
		t.Fatal(err)
	}
	e := &egress{}
	err = spec.LoadAndAssign(&e.objs, &ebpf.CollectionOptions{MapReplacements: replace})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("load egress object: %+v", ve)
		}
		t.Fatalf("load egress object: %v", err)
	}
	t.Cleanup(func() { e.objs.Close() })
	return e
}

// tcActUnspec is TC_ACT_UNSPEC (tcx's TCX_NEXT) as a run returns it.
const tcActUnspec = ^uint32(0)

// egressLinear is how much of a frame BPF_PROG_TEST_RUN takes for a tc
// program: a page less the skb's headroom and skb_shared_info.
const egressLinear = 4096 - 64 - 2 - 320

// egressRuns reports whether BPF_PROG_TEST_RUN takes a frame for a tc
// program: within egressLinear, and with the whole IP header of an IPv4
// or IPv6 EtherType, which the kernel reads before the program runs.
func egressRuns(frame []byte) bool {
	if len(frame) < 14 || len(frame) > egressLinear {
		return false
	}
	switch uint16(frame[12])<<8 | uint16(frame[13]) {
	case 0x0800:
		return len(frame) >= 14+20
	case 0x86dd:
		return len(frame) >= 14+40
	}
	return true
}

// send runs a frame going out through the program, which must pass it on,
// and through the model; both must leave it alike (unchanged, or an L2TP
// message with its Nr translated).
func (e *egress) send(f *harness.FastPath, frame []byte) error {
	_, err := e.sendOut(f, frame)
	return err
}

// sendOut is send that returns the frame as it goes out.
func (e *egress) sendOut(f *harness.FastPath, frame []byte) ([]byte, error) {
	out := make([]byte, len(frame)+64)
	opts := &ebpf.RunOptions{Data: frame, DataOut: out}
	ret, err := e.objs.TcDialogs.Run(opts)
	if err != nil {
		return nil, fmt.Errorf("run egress on %d bytes: %w", len(frame), err)
	}
	if ret != tcActUnspec {
		return nil, fmt.Errorf("egress returned %d, want TC_ACT_UNSPEC", int32(ret))
	}
	mine := append([]byte(nil), frame...)
	f.Model.Egress(mine, f.Now)
	out = opts.DataOut
	if !bytes.Equal(out, mine) {
		return out, fmt.Errorf("egress left the frame\n%x\nthe model\n%x", out, mine)
	}
	return out, nil
}

var (
	serverAddr  = netip.MustParseAddr("192.0.2.10")
	peerAddr    = netip.MustParseAddr("198.51.100.20")
	serverAddr6 = netip.MustParseAddr("2001:db8::10")
	peerAddr6   = netip.MustParseAddr("2001:db8::20")
)

// TestEgressLearns: an INVITE the server sends out, in any of the forms
// the XDP side reads, teaches the filter its dialog, whose in-dialog
// requests coming back then pass uncharged however many, while a dialog
// the server never opened is held by the sip-indialog bucket. What opens
// no dialog (a re-INVITE, another method, a response, another port)
// teaches nothing. The model agrees on every frame both ways.
func TestEgressLearns(t *testing.T) {
	f := harness.NewFastPath(t, false)
	e := newEgress(t, f)
	var p policy.Policy
	p.PerSource[cac.SIPInDialog] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	f.SetPolicy(t, p)
	f.MustAt(t, 5*second)

	out4 := func(src, dst uint16, s SIP) []byte {
		return Frame(Ether{}, IPv4{Src: serverAddr, Dst: peerAddr}, UDP{Src: src, Dst: dst}, s)
	}
	out6 := func(src, dst uint16, s SIP) []byte {
		return Frame(Ether{}, VLAN{ID: 7}, VLAN{TPID: 0x88a8, ID: 9}, IPv6{Src: serverAddr6, Dst: peerAddr6}, UDP{Src: src, Dst: dst}, s)
	}
	// From the peer's own port to the server's: the dialog's other side,
	// the address the INVITE went to, or a stranger.
	backFrom := func(id string, v6 bool) []byte {
		bye := harness.WithCallID(SIPRequest("BYE", harness.ToTag), "Call-ID: "+id)
		if v6 {
			return Frame(Ether{}, IPv6{Src: peerAddr6, Dst: serverAddr6}, UDP{Src: 40000, Dst: 5060}, bye)
		}
		return Frame(Ether{}, IPv4{Src: peerAddr, Dst: serverAddr}, UDP{Src: 40000, Dst: 5060}, bye)
	}
	back := func(id string) []byte { return backFrom(id, false) }
	lower := harness.WithCallID(SIPRequest("invite", harness.ToNoTag), "i:   lower@192.0.2.10")
	lower.Prefix = "\r\n"
	cases := []struct {
		name  string
		frame []byte
		id    string // the Call-ID its requests come back with
		learn bool
	}{
		{"from the SIP port", out4(5060, 40000, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: out-1@192.0.2.10")), "out-1@192.0.2.10", true},
		{"to the SIP port", out4(40001, 5080, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: out-2@192.0.2.10")), "out-2@192.0.2.10", true},
		{"IPv6, two tags", out6(5080, 5060, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "CALL-ID : out-3@2001:db8::10")), "out-3@2001:db8::10", true},
		{"lower case, compact, CRLF first", out4(5060, 5060, lower), "lower@192.0.2.10", true},
		{"a re-INVITE", out4(5060, 40000, harness.WithCallID(SIPRequest("INVITE", harness.ToTag), "Call-ID: re@192.0.2.10")), "re@192.0.2.10", false},
		{"OPTIONS", out4(5060, 40000, harness.WithCallID(SIPRequest("OPTIONS", harness.ToNoTag), "Call-ID: opt@192.0.2.10")), "opt@192.0.2.10", false},
		{"another port", out4(5070, 40000, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: port@192.0.2.10")), "port@192.0.2.10", false},
		{"L2TP's port", out4(1701, 40000, harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: l2tp@192.0.2.10")), "l2tp@192.0.2.10", false},
	}
	// A stranger's request spends the bucket of one: what comes back of a
	// dialog the filter does not know is held from then on.
	if passed, _ := f.Offer(t, back("stranger@198.51.100.20"), 1); passed != 1 {
		t.Fatal("the first in-dialog request found the bucket spent")
	}
	var verified uint64
	for _, c := range cases {
		if err := e.send(f, c.frame); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := 1
		if c.learn {
			n = 5
		}
		passed, reasons := f.Offer(t, backFrom(c.id, strings.HasPrefix(c.name, "IPv6")), n) // the model agrees on each
		switch {
		case c.learn && passed != n:
			t.Errorf("%s: %d of %d requests of the dialog passed (%v), want all, uncharged", c.name, passed, n, reasons)
		case !c.learn && passed != 0:
			t.Errorf("%s: taught a dialog; its request passed a spent sip-indialog bucket", c.name)
		}
		if c.learn {
			verified += uint64(n)
		}
	}
	if got := f.Stats(t).SIPInDialogVerified; got != verified {
		t.Errorf("%d in-dialog requests counted verified, want %d", got, verified)
	}
	// The entry of a learnt dialog holds when the INVITE went out, and the
	// INVITE the filter admitted coming in, sent on by a proxy with its
	// Call-ID, leaves its entry as it was.
	inviteNS := func(id string) uint64 {
		t.Helper()
		d, ok := harness.LookupDialog(t, f.Objs.Dialogs, classify.CallID(Frame(harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: "+id))))
		if !ok {
			t.Fatalf("dialog %s: not in the table", id)
		}
		return d.InviteNs
	}
	if got := inviteNS("out-1@192.0.2.10"); got != 5*second {
		t.Errorf("a dialog learnt going out at 5 s records %d ns", got)
	}
	proxied := harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: proxied@198.51.100.20")
	if passed, _ := f.Offer(t, Frame(Ether{}, IPv4{Src: peerAddr, Dst: serverAddr}, UDP{Src: 5060, Dst: 5060}, proxied), 1); passed != 1 {
		t.Fatal("the INVITE coming in was refused")
	}
	f.MustAt(t, 6*second)
	if err := e.send(f, out4(5060, 5060, proxied)); err != nil {
		t.Fatal(err)
	}
	if got := inviteNS("proxied@198.51.100.20"); got != 5*second {
		t.Errorf("the INVITE sent on rewrote the entry of the one admitted at 5 s: %d ns", got)
	}
	if passed, _ := f.Offer(t, back("proxied@198.51.100.20"), 2); passed != 2 {
		t.Errorf("the proxied dialog's requests: %d of 2 passed, want both, uncharged", passed)
	}
	if got := f.Stats(t).SIPInDialogVerified; got != verified+2 {
		t.Errorf("%d in-dialog requests counted verified, want %d", got, verified+2)
	}

	// Egress counts nothing of its own and charges nothing.
	if st := f.Stats(t); st.Classes[cac.SIPInvite].Admitted != 1 || st.PassedOther != 0 {
		t.Errorf("outgoing frames moved counters of the XDP side: %+v", st.Classes[cac.SIPInvite])
	}
}

// egressFrame is a frame the server might send: INVITEs and others of
// every form, from or to SIP ports or neither, with Call-IDs of every
// shape.
func egressFrame(rng *rand.Rand) []byte {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	ports := []uint16{5060, 5080, 1701, 40000, uint16(rng.Uint32())}
	s := SIPRequest(pick("INVITE", "invite", "InViTe", "INVITE", "OPTIONS", "BYE", "REGISTER"),
		pick(harness.ToNoTag, harness.ToNoTag, harness.ToTag, "<sip:b@x;tag=1>"))
	id := fmt.Sprintf("%x@192.0.2.10", rng.Uint64())
	if rng.IntN(8) == 0 {
		id = strings.Repeat("long", 40) + id // past SIP_HASH_MAX
	}
	s = harness.WithCallID(s, pick("Call-ID: ", "i: ", "call-id:", "CALL-ID  :  ", "Call-ID:\t", "Call-Id: ")+id)
	if rng.IntN(6) == 0 {
		s.Prefix = "\r\n"
	}
	if rng.IntN(10) == 0 {
		s.Headers = append([]string{"Call-ID: first@192.0.2.10"}, s.Headers...)
	}
	var l3 Layer = IPv4{Src: serverAddr, Dst: peerAddr}
	if rng.IntN(3) == 0 {
		l3 = IPv6{Src: serverAddr6, Dst: peerAddr6}
	}
	layers := []Layer{Ether{}}
	for n := rng.IntN(3); n > 0; n-- {
		layers = append(layers, VLAN{ID: uint16(rng.IntN(4096))})
	}
	layers = append(layers, l3, UDP{Src: ports[rng.IntN(len(ports))], Dst: ports[rng.IntN(len(ports))]}, s)
	return Frame(layers...)
}

// TestEgressDifferential holds the egress object to its Go twin over
// frames the server might send, mutated and random ones among them: after
// each, the dialog table holds exactly the Call-ID the twin learns, or
// nothing. The seed is logged, and XDPCAC_DIFF_SEED replays it.
func TestEgressDifferential(t *testing.T) {
	f := harness.NewFastPathWith(t, false, func(s *ebpf.CollectionSpec) {
		if err := maps.SizeDialogs(s, 256); err != nil {
			t.Fatal(err)
		}
	})
	e := newEgress(t, f)
	rng := rand.New(rand.NewPCG(diffSeed(t), 0x2545f4914f6cdd1d))
	learnt, failures := 0, 0
	n := differentialFrames(t) / 10
	for i := 0; i < n; i++ {
		var frame []byte
		switch i % 4 {
		case 0:
			frame = randomFrame(rng)
		case 1:
			frame = mutate(rng, egressFrame(rng))
		default:
			frame = egressFrame(rng)
		}
		if !egressRuns(frame) {
			continue
		}
		var want []uint64
		if r, msg := classify.ClassifySIPEgress(frame, f.Model.Ports); r.Kind == cac.Session && r.Class == cac.SIPInvite {
			if id := classify.CallID(msg); id != 0 {
				want = []uint64{id}
			}
		}
		if err := e.send(f, frame); err != nil {
			t.Fatal(err)
		}
		got := harness.DialogKeys(t, f.Objs.Dialogs)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			failures++
			t.Errorf("frame %d (%x): the table holds %x, the twin learns %x", i, frame, got, want)
			if failures > 20 {
				t.Fatal("too many differences")
			}
		}
		learnt += len(want)
		for _, k := range got {
			harness.ForgetDialog(t, f.Objs.Dialogs, k)
		}
	}
	t.Logf("%d frames, %d dialogs learnt", n, learnt)
	if learnt == 0 || learnt == n {
		t.Errorf("%d of %d frames learnt a dialog: the generator tests nothing", learnt, n)
	}
}

// TestEgressUnchanged: with no session agent, the program hands every
// frame on as it came, whatever it is, and returns TC_ACT_UNSPEC: what
// comes after it decides. (Egress admission, toward agents, is
// egress_agents_test.go's.)
func TestEgressUnchanged(t *testing.T) {
	f := harness.NewFastPath(t, false)
	e := newEgress(t, f)
	for _, c := range append(harness.SessionFrames(), harness.EdgeFrames()...) {
		if !egressRuns(c.Frame) {
			continue
		}
		out := make([]byte, len(c.Frame)+64)
		ret, err := e.objs.TcDialogs.Run(&ebpf.RunOptions{Data: c.Frame, DataOut: out})
		if err != nil {
			t.Fatal(err)
		}
		if ret != tcActUnspec || !bytes.Equal(out[:len(c.Frame)], c.Frame) {
			t.Errorf("%x: returned %d, frame changed: %v", c.Frame, ret, !bytes.Equal(out[:len(c.Frame)], c.Frame))
		}
	}
}
