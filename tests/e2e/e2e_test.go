package e2e

import (
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/cac"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestEndToEnd attaches the filter with cacctl to a veth in a namespace,
// sends frames of every class from the peer, and checks that `cacctl show
// stats -o json` counts each exactly; then detaches.
func TestEndToEnd(t *testing.T) {
	for _, mode := range []string{"native", "generic"} {
		t.Run(mode, func(t *testing.T) {
			tb := harness.NewTestbed(t)
			cfg := harness.WriteConfig(t, harness.E2eConfig)
			out, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg, "--mode", mode)
			if err != nil {
				t.Fatalf("attach: %v: %s", err, stderr)
			}
			if !strings.Contains(out, mode+" mode") {
				t.Errorf("attach said %q, want %s mode", out, mode)
			}
			t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })

			send := map[string]struct {
				n     int
				frame []byte
			}{
				"padi":      {3, Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})},
				"padr-qinq": {2, Frame(Ether{}, VLAN{TPID: 0x88a8, ID: 5}, VLAN{ID: 6}, PPPoE{Code: PADR})},
				"sccrq":     {4, harness.V4udp(1701, L2TP{MsgType: SCCRQ})},
				"icrq-v6":   {5, harness.V6udp(1701, L2TP{Version: 3, MsgType: ICRQ})},
				"invite":    {6, harness.V4udp(5080, SIPRequest("INVITE", harness.ToNoTag))},
				"options":   {7, harness.V6udp(5060, SIPRequest("OPTIONS", harness.ToNoTag))},
				"reinvite":  {2, harness.V4udp(5060, harness.StrangerDialog("INVITE"))},
				"fragment":  {2, Frame(Ether{}, IPv4{FragOff: 100, Proto: 17}, Raw("tail"))},
				"malformed": {3, Frame(Ether{}, PPPoE{VerType: 0x22, Code: PADI})},
				"pado":      {1, Frame(Ether{}, PPPoE{Code: PADO})},
				"response":  {1, harness.V4udp(5060, Raw("SIP/2.0 200 OK\r\n\r\n"))},
				"syn":       {10, Frame(Ether{}, IPv4{}, TCP{Src: 40000, Dst: 5060})},
				"tcp-ack":   {3, Frame(Ether{}, IPv4{}, TCP{Src: 40000, Dst: 5060, Ack: true})},
				"dns":       {4, harness.V4udp(53, Raw("query"))},
			}
			var frames [][]byte
			for _, s := range send {
				for i := 0; i < s.n; i++ {
					frames = append(frames, s.frame)
				}
			}
			testenv.Send(t, tb.Peer, tb.PeerIfc, frames)

			// The SYNs to 5060 open SIP connections (ports.sip-tcp's default);
			// the ACKs belong to connections already open and pass uncounted.
			want := maps.Stats{Fragment: 2, PassedOther: 2}
			for c, n := range map[cac.Class]uint64{cac.PPPoEPADI: 3, cac.PPPoEPADR: 2, cac.L2TPSCCRQ: 4,
				cac.L2TPICRQ: 5, cac.SIPInvite: 6, cac.SIPOptions: 7, cac.SIPInDialog: 2, cac.ClassMalformed: 3,
				cac.SIPConnect: 10} {
				want.Classes[c].Admitted = n
			}
			// The sums, and the same again as the only interface's share.
			wantView := want.View()
			wantView.Interfaces = map[string]maps.StatsView{tb.Box + ":" + tb.BoxIface: want.View()}
			var got maps.StatsView
			testenv.Poll(5*time.Second, 50*time.Millisecond, func() bool {
				got = tb.Stats(t)
				return reflect.DeepEqual(got, wantView)
			})
			if !reflect.DeepEqual(got, wantView) {
				t.Errorf("show stats -o json:\n got %+v\nwant %+v", got, wantView)
			}

			out, stderr, err = tb.Cacctl(t, "detach", tb.BoxIface)
			if err != nil {
				t.Fatalf("detach: %v: %s", err, stderr)
			}
			if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
				t.Errorf("after detach, %s still has XDP program %d", tb.BoxIface, id)
			}
			if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
				t.Errorf("after detach, the state directory holds %v", entries)
			}
		})
	}
}

// TestAttachRefusals: a missing interface, an interface that already has
// another XDP program, a second attach, and a bad config are all refused
// with a clear error, and nothing changes.
func TestAttachRefusals(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig)
	noState := func(what string) {
		t.Helper()
		if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
			t.Errorf("%s left state behind: %v", what, entries)
		}
	}

	_, stderr, err := tb.Cacctl(t, "attach", "nosuch0", "--config", cfg)
	if err == nil || !strings.Contains(stderr, "interface nosuch0 does not exist in network namespace "+tb.Box) {
		t.Errorf("missing interface: err %v, stderr %q", err, stderr)
	}
	noState("a missing interface")

	bad := harness.WriteConfig(t, "ports: {sip: [5060]}\nclasses:\n  sip-invite: {cps: -1}\n")
	_, stderr, err = tb.Cacctl(t, "attach", tb.BoxIface, "--config", bad)
	if err == nil || !strings.Contains(stderr, bad+":3:21: classes.sip-invite.cps: must be at least 0.001") {
		t.Errorf("bad config: err %v, stderr %q", err, stderr)
	}
	noState("a bad config")
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("a bad config attached program %d", id)
	}

	// Another program, attached through netlink as older tools do.
	other := harness.PassProgram(t, "other_xdp")
	err = testenv.Do(tb.Box, func() error {
		l, err := netlink.LinkByName(tb.BoxIface)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(l, other.FD(), 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	before := harness.XdpProgID(t, tb.Box, tb.BoxIface)
	_, stderr, err = tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg)
	if err == nil || !strings.Contains(stderr, "already has an XDP program") || !strings.Contains(stderr, "other_xdp") {
		t.Errorf("occupied interface: err %v, stderr %q", err, stderr)
	}
	noState("an occupied interface")
	if after := harness.XdpProgID(t, tb.Box, tb.BoxIface); after != before {
		t.Errorf("the other program changed from %d to %d", before, after)
	}

	// --force replaces a program attached over netlink.
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg, "--force"); err != nil {
		t.Fatalf("attach --force: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	if after := harness.XdpProgID(t, tb.Box, tb.BoxIface); after == before || after == 0 {
		t.Errorf("attach --force left program %d (the other was %d)", after, before)
	}
	_, stderr, err = tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg)
	if err == nil || !strings.Contains(stderr, "already attached") {
		t.Errorf("second attach: err %v, stderr %q", err, stderr)
	}
	_, stderr, err = tb.Cacctl(t, "detach", "nosuch0")
	if err == nil || !strings.Contains(stderr, "not attached to nosuch0") {
		t.Errorf("detach of an unknown interface: err %v, stderr %q", err, stderr)
	}
}

// TestDetachAfterInterfaceGone: when the interface vanishes under the
// filter, detach still cleans up, and show stats reads what is left.
func TestDetachAfterInterfaceGone(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 1 })

	if err := testenv.Do(tb.Box, func() error {
		l, err := netlink.LinkByName(tb.BoxIface)
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	}); err != nil {
		t.Fatal(err)
	}
	if got := tb.Stats(t).Classes["pppoe-padi"].Seen; got != 1 {
		t.Errorf("after the interface left, stats say %d PADIs, want 1", got)
	}
	out, _, err := tb.Cacctl(t, "show", "stats")
	if err != nil || !strings.Contains(out, tb.Box+":"+tb.BoxIface+": 1 first packets, 0 in-dialog, 0 malformed") {
		t.Errorf("show stats text: %v\n%s", err, out)
	}
	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach after the interface left: %v: %s", err, stderr)
	}
	if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
		t.Errorf("state left behind: %v", entries)
	}
}

// TestUnknownNetns: a namespace that does not exist is named in the error.
func TestUnknownNetns(t *testing.T) {
	testenv.RequireBPF(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig)
	state := harness.StateDir(t)
	_, stderr, err := harness.Cacctl(t, "--netns", "xdpcac-no-such-ns", "--state-dir", state, "attach", "eth0", "--config", cfg)
	if err == nil || !strings.Contains(stderr, `network namespace "xdpcac-no-such-ns"`) {
		t.Errorf("err %v, stderr %q", err, stderr)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("a refused attach created the state directory: %v", err)
	}
}

// TestStatsSumInterfaces: show stats sums every attached interface and
// breaks the sum down by interface.
func TestStatsSumInterfaces(t *testing.T) {
	tb := harness.NewTestbed(t)
	box2, peer2 := testenv.Veth(t, tb.Box, tb.Peer)
	cfg := harness.WriteConfig(t, harness.E2eConfig)
	for _, iface := range []string{tb.BoxIface, box2} {
		if _, stderr, err := tb.Cacctl(t, "attach", iface, "--config", cfg); err != nil {
			t.Fatalf("attach %s: %v: %s", iface, err, stderr)
		}
		t.Cleanup(func() { tb.Cacctl(t, "detach", iface) })
	}
	invite := harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag))
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{invite, invite})
	testenv.Send(t, tb.Peer, peer2, [][]byte{invite, invite, invite})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["sip-invite"].Seen == 5 })
	per := tb.Stats(t).Interfaces
	if n1, n2 := per[tb.Box+":"+tb.BoxIface].Classes["sip-invite"].Seen, per[tb.Box+":"+box2].Classes["sip-invite"].Seen; n1 != 2 || n2 != 3 {
		t.Errorf("per interface: %d and %d INVITEs, want 2 and 3", n1, n2)
	}
}

// TestDottedInterfaceName: a BRAS names its VLAN sub-interfaces eth0.100;
// the dot must not stop the filter from attaching (bpffs refuses dots in
// pin names).
func TestDottedInterfaceName(t *testing.T) {
	tb := harness.NewTestbed(t)
	dotted, peer := testenv.VethNamed(t, tb.Box, tb.Peer, testenv.Unique("xc")+".100", testenv.Unique("xcp"))
	cfg := harness.WriteConfig(t, harness.E2eConfig)
	if _, stderr, err := tb.Cacctl(t, "attach", dotted, "--config", cfg); err != nil {
		t.Fatalf("attach %s: %v: %s", dotted, err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", dotted) })
	testenv.Send(t, tb.Peer, peer, [][]byte{Frame(Ether{Broadcast: true}, VLAN{ID: 100}, PPPoE{Code: PADI})})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Interfaces[tb.Box+":"+dotted].Classes["pppoe-padi"].Seen == 1 })
	if _, stderr, err := tb.Cacctl(t, "detach", dotted); err != nil {
		t.Fatalf("detach %s: %v: %s", dotted, err, stderr)
	}
	if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
		t.Errorf("state left behind: %v", entries)
	}
}

// TestLeastPrivilege: with only CAP_NET_ADMIN, CAP_SYS_ADMIN and CAP_BPF
// (the deploy/ unit's set, less CAP_PERFMON) cacctl attaches, shows and
// detaches; without CAP_SYS_ADMIN it says what it needs instead of
// failing deep inside; a user who is not root is told to use sudo.
func TestLeastPrivilege(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig)
	limited := func(caps string, args ...string) (string, error) {
		all := append([]string{"--bounding-set=-all," + caps, "--inh-caps=-all," + caps, "--ambient-caps=-all," + caps, "--",
			harness.CacctlBin, "--netns", tb.Box, "--state-dir", tb.State}, args...)
		out, err := exec.Command("setpriv", all...).CombinedOutput()
		return string(out), err
	}
	const caps = "+net_admin,+sys_admin,+bpf"
	if out, err := limited(caps, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach with %s: %v\n%s", caps, err, out)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	if out, err := limited(caps, "show", "stats"); err != nil || !strings.Contains(out, tb.BoxIface) {
		t.Errorf("show stats with %s: %v\n%s", caps, err, out)
	}
	if out, err := limited("+net_admin,+bpf", "show", "stats"); err == nil || !strings.Contains(out, "missing: CAP_SYS_ADMIN") {
		t.Errorf("show stats without CAP_SYS_ADMIN: %v\n%s", err, out)
	}
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", harness.CacctlBin, "status").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run it with sudo") || strings.Contains(string(out), "goroutine") {
		t.Errorf("status as nobody: %v\n%s", err, out)
	}
	if out, err := limited(caps, "detach", tb.BoxIface); err != nil {
		t.Errorf("detach with %s: %v\n%s", caps, err, out)
	}
}

// TestMTUChange: the interface's MTU changes under the filter; it stays
// attached and keeps counting.
func TestMTUChange(t *testing.T) {
	tb := harness.NewTestbed(t)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", harness.WriteConfig(t, harness.E2eConfig)); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	id := harness.XdpProgID(t, tb.Box, tb.BoxIface)
	for _, mtu := range []string{"1400", "1500"} {
		if out, err := exec.Command("ip", "-n", tb.Box, "link", "set", tb.BoxIface, "mtu", mtu).CombinedOutput(); err != nil {
			t.Fatalf("mtu %s: %v: %s", mtu, err, out)
		}
		if got := harness.XdpProgID(t, tb.Box, tb.BoxIface); got != id {
			t.Fatalf("after mtu %s the XDP program is %d, was %d", mtu, got, id)
		}
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 1 })
}
