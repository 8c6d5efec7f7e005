package bench

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/internal/storm"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestPADIStormAfterOutage: 10,000 modems reconnect at once and each
// retries its PADI about every second until it gets through. With one discovery
// a MAC and 2,000 a second for the class, the BRAS side never sees more
// than the class allows, and every MAC gets through within a few seconds.
func TestPADIStormAfterOutage(t *testing.T) {
	tb := harness.NewTestbed(t)
	const modems, burst, cps = 10000, 500, 2000
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {cps: 2000, burst: 500, per-source: {key: mac, cps: 0.001, burst: 1}}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	frames := make([][]byte, modems)
	for i := range frames {
		frames[i] = Frame(Ether{Src: [6]byte{2, 0, 0x5e, 0, byte(i >> 8), byte(i)}, Broadcast: true}, VLAN{ID: uint16(100 + i%8)}, PPPoE{Code: PADI})
	}
	start := time.Now()
	for round := 1; ; round++ {
		// Modems retry on their own timers: a round is spread over its
		// second. Those through already retry too, and are rejected by
		// source.
		for slice := 0; slice < 10; slice++ {
			testenv.Send(t, tb.Peer, tb.PeerIfc, frames[slice*modems/10:(slice+1)*modems/10])
			time.Sleep(100 * time.Millisecond)
		}
		testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == uint64(round*modems) })
		c := tb.Stats(t).Classes["pppoe-padi"]
		elapsed := time.Since(start).Seconds()
		if float64(c.Admitted) > burst+cps*elapsed+1 {
			t.Fatalf("round %d: %d admitted in %.2fs, more than the class allows (%d + %d/s)", round, c.Admitted, elapsed, burst, cps)
		}
		if through := admittedMACs(t, tb); through != c.Admitted {
			t.Fatalf("round %d: %d PADIs admitted but %d MACs in the per-source table: a MAC got through twice", round, c.Admitted, through)
		}
		t.Logf("round %d at %.1fs: %d of %d modems through (%+v)", round, elapsed, c.Admitted, modems, c.Reasons)
		if c.Admitted == modems {
			return
		}
		if round == 10 {
			t.Fatalf("after %d rounds only %d of %d modems got through", round, c.Admitted, modems)
		}
	}
}

// admittedMACs counts the PADI sources in the per-source table: a source
// enters it only when its call is admitted.
func admittedMACs(t *testing.T, tb *harness.Testbed) uint64 {
	t.Helper()
	p, err := loader.Open(tb.State, loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var n uint64
	var k bpf.XdpCacSource
	var v bpf.XdpCacBucket
	it := p.Sources.Iterate()
	for it.Next(&k, &v) {
		if cac.Class(k.Class) == cac.PPPoEPADI {
			n++
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestICRQBurstAfterTunnelFlap: a LAC's tunnel flaps and all its sessions
// come back at once as ICRQs. The charge budget (vpdn 1 1 against a limit
// of 60) lets 60 through in any one second, however many arrive, and the
// next second 60 more.
func TestICRQBurstAfterTunnelFlap(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  l2tp-icrq: {cps: 1000, burst: 1000}\n"+
		harness.Ios("new-model", "limit 60", "vpdn 1 1"))
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	burst := make([][]byte, 500)
	for i := range burst {
		burst[i] = Frame(Ether{}, IPv4{Src: netip.MustParseAddr("198.51.100.1")}, UDP{Src: 1701, Dst: 1701}, L2TP{MsgType: ICRQ})
	}
	var before uint64
	for round := 1; round <= 2; round++ {
		start := time.Now()
		testenv.Send(t, tb.Peer, tb.PeerIfc, burst)
		testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["l2tp-icrq"].Seen == uint64(round*500) })
		// A burst that a busy host spreads over more than a lifetime
		// may have 60 more through for each lifetime it spans.
		lifetimes := 1 + uint64(time.Since(start)/time.Second)
		c := tb.Stats(t).Classes["l2tp-icrq"]
		got := c.Admitted - before
		before = c.Admitted
		t.Logf("round %d: %d admitted, %+v", round, got, c.Reasons)
		if got < 60 || got > 60*lifetimes || c.Reasons["session-charges"] == 0 {
			t.Errorf("round %d: %d of 500 admitted over %d lifetime(s), want 60 a lifetime and the rest rejected by session charges", round, got, lifetimes)
		}
		time.Sleep(1100 * time.Millisecond) // the charges of the burst expire
	}
}

// TestSIPScannerBesideTrustedPeer: a scanner floods OPTIONS and INVITEs
// from 250 addresses at 2,000 a second while a trusted peer, an account of
// its own, calls 50 times a second. The scanner is held by its per-source
// buckets; not one of the peer's calls is refused.
func TestSIPScannerBesideTrustedPeer(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+`classes:
  sip-invite: {cps: 1000, per-source: {cps: 0.1, burst: 1}}
  sip-options: {per-source: {cps: 0.1, burst: 2}}
customers:
  - {name: trusted, cps: 60, burst: 60, accounts: [{name: pbx, source: 192.0.2.2/32, cps: 60, burst: 60}]}
`)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	bras, scanner := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("203.0.113.1")
	invites, options := storm.SIPFlood("INVITE", scanner, 250, bras), storm.SIPFlood("OPTIONS", scanner, 250, bras)
	g := storm.Generator{Name: "sip-scanner", Rate: 2000, Duration: 2 * time.Second,
		Frame: storm.Mix(func(i int) []byte {
			if i%2 == 0 {
				return invites(i / 2)
			}
			return options(i / 2)
		}, storm.SIPFlood("INVITE", netip.MustParseAddr("192.0.2.2"), 1, bras), 40)}
	r, err := g.Run(context.Background(), tb.Peer, tb.PeerIfc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	trusted := uint64((r.Sent + 39) / 40)
	testenv.WaitFor(t, func() bool {
		s := tb.Stats(t)
		return s.Classes["sip-invite"].Seen+s.Classes["sip-options"].Seen == uint64(r.Sent)
	})
	s := tb.Stats(t)
	inv, opt := s.Classes["sip-invite"], s.Classes["sip-options"]
	t.Logf("INVITE %+v, OPTIONS %+v", inv, opt)
	if n := inv.Rejected - inv.Reasons["source"]; n != 0 {
		t.Errorf("%d INVITEs rejected other than by source: the trusted peer's calls were refused", n)
	}
	// Every scanner address has its first INVITE admitted: fewer than the
	// peer's calls and those 250 means some of the peer's were refused.
	if inv.Admitted < trusted+250 || inv.Admitted > trusted+250+50+1 {
		t.Errorf("%d INVITEs admitted: want the peer's %d, and of the scanner's at most one a source and 0.1 a second each", inv.Admitted, trusted)
	}
	if opt.Reasons["source"] == 0 || opt.Admitted > 250*2+50+1 {
		t.Errorf("OPTIONS %+v: the scanner was not held by its per-source buckets", opt)
	}
}
