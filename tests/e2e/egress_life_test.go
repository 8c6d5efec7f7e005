package e2e

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// TestEgressTakeover: the egress program lives through what the XDP
// program lives through. Adopt attaches it to an attachment of a version
// before it, switches one of another version to this version's, attaches
// it again when it went missing or its interface came back; Repin pins it
// again when the pins are gone. Status says how it is attached at each
// step. With tcx, and with the clsact fallback.
func TestEgressTakeover(t *testing.T) {
	harness.EgressModes(t, func(t *testing.T, clsact bool) string {
		tb := harness.NewTestbed(t)
		a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
		cfg := harness.WriteConfig(t, egressConfig)
		attachClsact(t, tb.State, a, cfg, clsact)
		t.Cleanup(func() { loader.Detach(a, tb.State) })
		dir := a.Dir(tb.State)
		opts := loader.Options{StateDir: tb.State, EgressClsact: clsact}
		kind := statusEgress(t, tb)
		if clsact && kind != loader.EgressClsact {
			t.Fatalf("attached with clsact asked for, status says %q", kind)
		}
		check := func(step string, want string) {
			t.Helper()
			if got := statusEgress(t, tb); got != want {
				t.Errorf("%s: status says egress %q, want %q", step, got, want)
			}
			onIface := harness.OurEgress(t, tb)
			if want == loader.EgressNone || want == loader.EgressGone {
				want = ""
			}
			if onIface != want {
				t.Errorf("%s: the interface has egress %q, want %q", step, onIface, want)
			}
		}
		adopt := func(step string, want loader.Adopted) {
			t.Helper()
			did, err := loader.Adopt(a, opts)
			if err != nil || did != want {
				t.Fatalf("%s: adopt did %q (%v), want %q", step, did, err, want)
			}
			check(step, kind)
		}

		// A version before the egress program: none pinned, none there.
		unpinEgress(t, a, dir)
		check("egress removed", loader.EgressNone)
		adopt("adopt without egress", loader.Upgraded)
		adopt("adopt again", loader.Kept)

		// Another version's egress program in place of ours.
		old := egressStandIn(t)
		if kind == loader.EgressTCX {
			l, err := link.LoadPinnedLink(filepath.Join(dir, "egress-link"), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = l.Update(old)
			l.Close()
			if err != nil {
				t.Fatal(err)
			}
		} else {
			harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
				return netlink.FilterReplace(&netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{
					LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_MIN_EGRESS, Handle: 1, Priority: 0xcac, Protocol: 3,
				}, Fd: old.FD(), Name: "xdpcac-dialogs", DirectAction: true})
			})
		}
		os.Remove(filepath.Join(dir, "egress-prog"))
		if err := old.Pin(filepath.Join(dir, "egress-prog")); err != nil {
			t.Fatal(err)
		}
		adopt("adopt another version", loader.Upgraded)

		if kind == loader.EgressClsact {
			// A filter removed by hand is missing; adopt puts it back.
			harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
				fs, err := netlink.FilterList(l, netlink.HANDLE_MIN_EGRESS)
				for _, f := range fs {
					netlink.FilterDel(f)
				}
				return err
			})
			check("filter removed", loader.EgressGone)
			adopt("adopt a missing filter", loader.Upgraded)
		}

		// The pins gone under a held link: pinned again, and there.
		held, err := loader.HoldLink(tb.State, a)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if pinned, err := loader.Repin(tb.State, a, held); err != nil || !pinned {
			t.Fatalf("repin: %v, %v", pinned, err)
		}
		held.Close()
		want := kind
		check("repinned", want)

		// The interface goes and comes back: attached again.
		harness.DoNetlink(t, tb.Box, tb.BoxIface, netlink.LinkDel)
		testenv.VethNamed(t, tb.Box, tb.Peer, tb.BoxIface, tb.PeerIfc)
		check("interface back", loader.EgressGone)
		adopt("adopt the interface back", loader.Reattached)

		if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
			t.Fatalf("detach: %v: %s", err, stderr)
		}
		if got := harness.OurEgress(t, tb); got != "" {
			t.Errorf("after detach, the interface still has an egress %s of ours", got)
		}
		return kind
	})
}

// unpinEgress takes the egress program off as a version before it would
// have left the attachment: no pins, nothing on the interface.
func unpinEgress(t *testing.T, a loader.Attachment, dir string) {
	t.Helper()
	if l, err := link.LoadPinnedLink(filepath.Join(dir, "egress-link"), nil); err == nil {
		l.Unpin()
		l.Close()
	} else {
		harness.DoNetlink(t, a.Netns, a.Iface, func(l netlink.Link) error {
			fs, err := netlink.FilterList(l, netlink.HANDLE_MIN_EGRESS)
			for _, f := range fs {
				netlink.FilterDel(f)
			}
			return err
		})
	}
	os.Remove(filepath.Join(dir, "egress-prog"))
	os.Remove(filepath.Join(dir, "egress-clsact"))
}

// egressStandIn is a tc program that only returns TC_ACT_UNSPEC: another
// version's egress program.
func egressStandIn(t *testing.T) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "old_egress", Type: ebpf.SchedCLS, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, -1), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestEgressAttachFails: when the egress program cannot be attached (here
// an ingress qdisc holds the place a clsact qdisc needs), the attach fails
// whole: no XDP program, no filter, no state, and the qdisc that was there
// stays.
func TestEgressAttachFails(t *testing.T) {
	tb := harness.NewTestbed(t)
	harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
		return netlink.QdiscAdd(&netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_INGRESS,
		}})
	})
	a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
	cfg, err := config.Load(harness.WriteConfig(t, egressConfig))
	if err != nil {
		t.Fatal(err)
	}
	_, err = loader.Attach(a, loader.Options{StateDir: tb.State, SIPPorts: cfg.Ports.SIP, EgressClsact: true})
	if err == nil {
		loader.Detach(a, tb.State)
		t.Fatal("attach succeeded without a place for the egress program")
	}
	t.Logf("attach: %v", err)
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("a failed attach left XDP program %d", id)
	}
	if got := harness.OurEgress(t, tb); got != "" {
		t.Errorf("a failed attach left an egress %s", got)
	}
	if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
		t.Errorf("a failed attach left state: %v", entries)
	}
	ingress := false
	harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
		qs, err := netlink.QdiscList(l)
		for _, q := range qs {
			ingress = ingress || q.Type() == "ingress"
		}
		return err
	})
	if !ingress {
		t.Error("the ingress qdisc that was there is gone")
	}
}

// TestEgressNetnsGone: with the interface's network namespace gone, and
// the interface and its filters with it, detach still removes the
// attachment, with tcx and with the clsact fallback.
func TestEgressNetnsGone(t *testing.T) {
	harness.EgressModes(t, func(t *testing.T, clsact bool) string {
		tb := harness.NewTestbed(t)
		a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
		attachClsact(t, tb.State, a, harness.WriteConfig(t, egressConfig), clsact)
		kind := statusEgress(t, tb)
		if out, err := exec.Command("ip", "netns", "del", tb.Box).CombinedOutput(); err != nil {
			loader.Detach(a, tb.State)
			t.Fatalf("ip netns del: %v: %s", err, out)
		}
		if err := loader.Detach(a, tb.State); err != nil {
			t.Fatalf("detach with the namespace gone: %v", err)
		}
		if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
			t.Errorf("state left behind: %v", entries)
		}
		return kind
	})
}

// TestEgressLetsOthersDecide: the egress program ends no chain. Another
// tool's program after it, here one that drops everything, still runs: the
// box's INVITE is learnt, and never reaches the peer.
func TestEgressLetsOthersDecide(t *testing.T) {
	harness.EgressModes(t, func(t *testing.T, clsact bool) string {
		tb := harness.NewTestbed(t)
		testenv.Addr(t, tb.Box, tb.BoxIface, egressBoxAddr.String()+"/24")
		testenv.Addr(t, tb.Peer, tb.PeerIfc, egressPeerAddr.String()+"/24")
		// The drop takes ARP too: the box knows the peer's address.
		mac := testenv.HardwareAddr(t, tb.Peer, tb.PeerIfc)
		if out, err := exec.Command("ip", "-n", tb.Box, "neigh", "replace", egressPeerAddr.String(),
			"lladdr", net.HardwareAddr(mac[:]).String(), "dev", tb.BoxIface, "nud", "permanent").CombinedOutput(); err != nil {
			t.Fatalf("ip neigh: %v: %s", err, out)
		}
		a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
		attachClsact(t, tb.State, a, harness.WriteConfig(t, egressConfig), clsact)
		t.Cleanup(func() { loader.Detach(a, tb.State) })

		drop, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "drop_all", Type: ebpf.SchedCLS, License: "MIT",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // TC_ACT_SHOT
		})
		if err != nil {
			t.Fatal(err)
		}
		defer drop.Close()
		kind := statusEgress(t, tb)
		harness.DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
			if kind == loader.EgressTCX {
				dl, err := link.AttachTCX(link.TCXOptions{Interface: l.Attrs().Index, Program: drop, Attach: ebpf.AttachTCXEgress, Anchor: link.Tail()})
				if err == nil {
					t.Cleanup(func() { dl.Close() })
				}
				return err
			}
			return netlink.FilterAdd(&netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{
				LinkIndex: l.Attrs().Index, Parent: netlink.HANDLE_MIN_EGRESS, Handle: 1, Priority: 0xcac + 1, Protocol: unix.ETH_P_ALL,
			}, Fd: drop.FD(), Name: "drop-all", DirectAction: true})
		})

		got := make(chan error, 1)
		if err := testenv.Do(tb.Peer, func() error {
			c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(egressPeerAddr, 5060)))
			if err != nil {
				return err
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _, err := c.ReadFromUDPAddrPort(make([]byte, 2048))
				got <- err
			}()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		msg := Frame(harness.WithCallID(SIPRequest("INVITE", harness.ToNoTag), "Call-ID: dropped@203.0.113.1"))
		sendFromBox(t, tb.Box, msg, false)
		waitDialog(t, tb.State, a, classify.CallID(msg))
		if err := <-got; err == nil {
			t.Error("the peer received the INVITE: the program after the egress program never ran")
		}
		return kind
	})
}

// TestEgressRepinAgain: pins removed again and again under a held link.
// The tcx link whose last pin went is freed a moment later and listed by
// the kernel until then: Repin must take it for gone and attach anew, not
// fail on it.
func TestEgressRepinAgain(t *testing.T) {
	tb := harness.NewTestbed(t)
	a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
	attachClsact(t, tb.State, a, harness.WriteConfig(t, egressConfig), false)
	t.Cleanup(func() { loader.Detach(a, tb.State) })
	held, err := loader.HoldLink(tb.State, a)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for i := 0; i < 10; i++ {
		if err := os.RemoveAll(a.Dir(tb.State)); err != nil {
			t.Fatal(err)
		}
		if _, err := loader.Repin(tb.State, a, held); err != nil {
			t.Fatalf("repin %d: %v", i, err)
		}
	}
	if got, want := harness.OurEgress(t, tb), statusEgress(t, tb); got != want || got == "" {
		t.Errorf("after the repins the interface has egress %q, status says %q", got, want)
	}
}
