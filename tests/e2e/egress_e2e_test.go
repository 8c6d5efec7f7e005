package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// egressConfig holds a stranger's in-dialog requests to one.
const egressConfig = harness.E2eConfig + `
classes:
  sip-indialog: {per-source: {cps: 0.001, burst: 1}}
`

// The testbed's addresses, in its own namespaces only.
var (
	egressBoxAddr  = netip.MustParseAddr("203.0.113.1")
	egressPeerAddr = netip.MustParseAddr("203.0.113.2")
)

// TestEgressDialogs: the box, the SIP server behind the filter, sends an
// INVITE out of its own socket; the egress program learns its Call-ID, so
// the peer's BYEs of that dialog pass uncharged under a sip-indialog
// bucket of one, while a stranger's dialog is held after its first. It
// runs with cacctl (tcx where the kernel has it) and with the loader made
// to use the clsact fallback, with and without a clsact qdisc there
// before; status shows the egress program, and detach leaves no link,
// filter or qdisc of ours behind, and the qdisc that was there before.
func TestEgressDialogs(t *testing.T) {
	for _, v := range []struct {
		name          string
		clsact, qdisc bool
		paged         bool // the INVITE's headers in pages: the program pulls them in
	}{{"cacctl", false, false, true}, {"clsact", true, false, false}, {"clsact-kept", true, true, false}} {
		t.Run(v.name, func(t *testing.T) {
			tb := harness.NewTestbed(t)
			testenv.Addr(t, tb.Box, tb.BoxIface, egressBoxAddr.String()+"/24")
			testenv.Addr(t, tb.Peer, tb.PeerIfc, egressPeerAddr.String()+"/24")
			if v.qdisc {
				harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error { return netlink.QdiscAdd(clsactOf(l)) })
			}
			cfg := harness.WriteConfig(t, egressConfig)
			a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
			if v.clsact {
				attachClsact(t, tb.State, a, cfg, true)
			} else if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
				t.Fatalf("attach: %v: %s", err, stderr)
			}
			t.Cleanup(func() { loader.Detach(a, tb.State) })
			kind := statusEgress(t, tb)
			if want := map[bool]string{true: loader.EgressClsact}[v.clsact]; want != "" && kind != want {
				t.Fatalf("status shows egress %q, want %q", kind, want)
			}
			if kind != loader.EgressTCX && kind != loader.EgressClsact {
				t.Fatalf("status shows egress %q, want tcx or clsact", kind)
			}
			if got := harness.OurEgress(t, tb); got != kind {
				t.Fatalf("status says %s, the interface has %q", kind, got)
			}
			if out, _, err := tb.Cacctl(t, "status"); harness.StatusErr(err) != nil || !strings.Contains(out, "egress") || !strings.Contains(out, " "+kind+" ") {
				t.Errorf("status text does not show the egress program (%s): %v\n%s", kind, err, out)
			}

			invite := harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: box-call@203.0.113.1")
			msg := Frame(invite) // the payload alone: no layer beneath
			sendFromBox(t, tb.Box, msg, v.paged)
			waitDialog(t, tb.State, a, classify.CallID(msg))

			bye := func(id string) []byte {
				return Frame(Ether{}, IPv4{Src: egressPeerAddr, Dst: egressBoxAddr}, UDP{Src: 5060, Dst: 5060},
					harness.WithCallID(SIPRequest("BYE", harness.ToTag), "Call-ID: "+id))
			}
			var frames [][]byte
			for i := 0; i < 3; i++ {
				frames = append(frames, bye("box-call@203.0.113.1"), bye("stranger@203.0.113.2"))
			}
			testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
			var got indialogCounts
			testenv.WaitFor(t, func() bool {
				got = indialogOf(tb.Stats(t))
				return got.Seen == 6
			})
			if want := (indialogCounts{Seen: 6, Admitted: 4, Verified: 3, Rejected: 2}); got != want {
				t.Errorf("in-dialog requests: %+v, want %+v: the box's dialog uncharged, the stranger's held after one", got, want)
			}

			if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
				t.Fatalf("detach: %v: %s", err, stderr)
			}
			if got := harness.OurEgress(t, tb); got != "" {
				t.Errorf("after detach, the interface still has an egress %s of ours", got)
			}
			if has := hasClsact(t, tb); has != v.qdisc {
				t.Errorf("after detach, a clsact qdisc is there: %v, want %v (there before: %v)", has, v.qdisc, v.qdisc)
			}
			if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
				t.Errorf("after detach, the state directory holds %v", entries)
			}
		})
	}
}

// indialogCounts are what sip-indialog counted, and of its admitted those
// of a known dialog.
type indialogCounts struct{ Seen, Admitted, Verified, Rejected uint64 }

func indialogOf(v maps.StatsView) indialogCounts {
	c := v.Classes["sip-indialog"]
	return indialogCounts{Seen: c.Seen, Admitted: c.Admitted, Verified: v.SIPInDialogVerified, Rejected: c.Rejected}
}

// attachClsact attaches with the loader as cacctl attach does, with the
// egress program on a clsact filter whatever the kernel if clsact is set.
func attachClsact(t *testing.T, stateDir string, a loader.Attachment, cfgFile string, clsact bool) {
	t.Helper()
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Of(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := loader.Options{StateDir: stateDir, Policy: p, L2TPPorts: cfg.Ports.L2TP, SIPPorts: cfg.Ports.SIP, EgressClsact: clsact}
	if _, err := loader.Attach(a, opts); err != nil {
		t.Fatalf("attach: %v", err)
	}
}

// statusEgress is what cacctl status -o json says of the egress program.
func statusEgress(t *testing.T, tb *harness.Testbed) string {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "status", "-o", "json")
	if harness.StatusErr(err) != nil {
		t.Fatalf("status: %v: %s", err, stderr)
	}
	var v struct {
		Interfaces []struct {
			Interface, Egress string
		} `json:"interfaces"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Interfaces) != 1 {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	return v.Interfaces[0].Egress
}

// sendFromBox sends msg from the box's own UDP socket on port 5060 to the
// peer's, as a SIP server calling out would. Paged, it is written in two
// parts to a corked socket: the stack puts the second in pages (veth has
// scatter-gather), so the skb's linear part ends inside the request line.
func sendFromBox(t *testing.T, ns string, msg []byte, paged bool) {
	t.Helper()
	err := testenv.Do(ns, func() error {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(egressBoxAddr, 5060)))
		if err != nil {
			return err
		}
		defer c.Close()
		to := netip.AddrPortFrom(egressPeerAddr, 5060)
		if !paged {
			_, err = c.WriteToUDPAddrPort(msg, to)
			return err
		}
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		cork := func(on int) (err error) {
			raw.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_CORK, on) })
			return err
		}
		if err := cork(1); err != nil {
			return fmt.Errorf("cork: %w", err)
		}
		for _, part := range [][]byte{msg[:10], msg[10:]} {
			if _, err := c.WriteToUDPAddrPort(part, to); err != nil {
				return err
			}
		}
		return cork(0) // sends the datagram
	})
	if err != nil {
		t.Fatalf("send the INVITE from the box: %v", err)
	}
}

// waitDialog waits until the dialog table holds callid, and only it.
func waitDialog(t *testing.T, stateDir string, a loader.Attachment, callid uint64) {
	t.Helper()
	p, err := loader.Open(stateDir, a)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var keys []uint64
	testenv.Poll(5*time.Second, 20*time.Millisecond, func() bool {
		keys = harness.DialogKeys(t, p.Dialogs)
		return len(keys) > 0
	})
	if len(keys) != 1 || keys[0] != callid {
		t.Fatalf("the dialog table holds %x, want the INVITE's Call-ID %x", keys, callid)
	}
}

func clsactOf(l netlink.Link) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{
		LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT,
	}, QdiscType: "clsact"}
}

func hasClsact(t *testing.T, tb *harness.Testbed) bool {
	has := false
	harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
		qs, err := netlink.QdiscList(l)
		for _, q := range qs {
			has = has || q.Type() == "clsact"
		}
		return err
	})
	return has
}
