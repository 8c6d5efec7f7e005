package tests

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
	"github.com/xdpcac/xdpcac/cac/classify"
	"github.com/xdpcac/xdpcac/cac/config"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
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
	egressModes(t, func(t *testing.T, clsact bool) string {
		tb := newTestbed(t)
		a := loader.Attachment{Iface: tb.boxIface, Netns: tb.box}
		cfg := writeConfig(t, egressConfig)
		attachClsact(t, tb.state, a, cfg, clsact)
		t.Cleanup(func() { loader.Detach(a, tb.state) })
		dir := a.Dir(tb.state)
		opts := loader.Options{StateDir: tb.state, EgressClsact: clsact}
		kind := statusEgress(t, tb)
		if clsact && kind != loader.EgressClsact {
			t.Fatalf("attached with clsact asked for, status says %q", kind)
		}
		check := func(step string, want string) {
			t.Helper()
			if got := statusEgress(t, tb); got != want {
				t.Errorf("%s: status says egress %q, want %q", step, got, want)
			}
			onIface := ourEgress(t, tb)
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
			doNetlink(t, tb.box, tb.boxIface, func(l netlink.Link) error {
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
			doNetlink(t, tb.box, tb.boxIface, func(l netlink.Link) error {
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
		held, err := loader.HoldLink(tb.state, a)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if pinned, err := loader.Repin(tb.state, a, held); err != nil || !pinned {
			t.Fatalf("repin: %v, %v", pinned, err)
		}
		held.Close()
		want := kind
		check("repinned", want)

		// The interface goes and comes back: attached again.
		doNetlink(t, tb.box, tb.boxIface, netlink.LinkDel)
		testenv.VethNamed(t, tb.box, tb.peer, tb.boxIface, tb.peerIfc)
		check("interface back", loader.EgressGone)
		adopt("adopt the interface back", loader.Reattached)

		if _, stderr, err := tb.cacctl(t, "detach", tb.boxIface); err != nil {
			t.Fatalf("detach: %v: %s", err, stderr)
		}
		if got := ourEgress(t, tb); got != "" {
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
		doNetlink(t, a.Netns, a.Iface, func(l netlink.Link) error {
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
	tb := newTestbed(t)
	doNetlink(t, tb.box, tb.boxIface, func(l netlink.Link) error {
		return netlink.QdiscAdd(&netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_INGRESS,
		}})
	})
	a := loader.Attachment{Iface: tb.boxIface, Netns: tb.box}
	cfg, err := config.Load(writeConfig(t, egressConfig))
	if err != nil {
		t.Fatal(err)
	}
	_, err = loader.Attach(a, loader.Options{StateDir: tb.state, SIPPorts: cfg.Ports.SIP, EgressClsact: true})
	if err == nil {
		loader.Detach(a, tb.state)
		t.Fatal("attach succeeded without a place for the egress program")
	}
	t.Logf("attach: %v", err)
	if id := xdpProgID(t, tb.box, tb.boxIface); id != 0 {
		t.Errorf("a failed attach left XDP program %d", id)
	}
	if got := ourEgress(t, tb); got != "" {
		t.Errorf("a failed attach left an egress %s", got)
	}
	if entries, _ := os.ReadDir(tb.state); len(entries) != 0 {
		t.Errorf("a failed attach left state: %v", entries)
	}
	ingress := false
	doNetlink(t, tb.box, tb.boxIface, func(l netlink.Link) error {
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
	egressModes(t, func(t *testing.T, clsact bool) string {
		tb := newTestbed(t)
		a := loader.Attachment{Iface: tb.boxIface, Netns: tb.box}
		attachClsact(t, tb.state, a, writeConfig(t, egressConfig), clsact)
		kind := statusEgress(t, tb)
		if out, err := exec.Command("ip", "netns", "del", tb.box).CombinedOutput(); err != nil {
			loader.Detach(a, tb.state)
			t.Fatalf("ip netns del: %v: %s", err, out)
		}
		if err := loader.Detach(a, tb.state); err != nil {
			t.Fatalf("detach with the namespace gone: %v", err)
		}
		if entries, _ := os.ReadDir(tb.state); len(entries) != 0 {
			t.Errorf("state left behind: %v", entries)
		}
		return kind
	})
}

// TestEgressLetsOthersDecide: the egress program ends no chain. Another
// tool's program after it, here one that drops everything, still runs: the
// box's INVITE is learnt, and never reaches the peer.
func TestEgressLetsOthersDecide(t *testing.T) {
	egressModes(t, func(t *testing.T, clsact bool) string {
		tb := newTestbed(t)
		testenv.Addr(t, tb.box, tb.boxIface, egressBoxAddr.String()+"/24")
		testenv.Addr(t, tb.peer, tb.peerIfc, egressPeerAddr.String()+"/24")
		// The drop takes ARP too: the box knows the peer's address.
		mac := testenv.HardwareAddr(t, tb.peer, tb.peerIfc)
		if out, err := exec.Command("ip", "-n", tb.box, "neigh", "replace", egressPeerAddr.String(),
			"lladdr", net.HardwareAddr(mac[:]).String(), "dev", tb.boxIface, "nud", "permanent").CombinedOutput(); err != nil {
			t.Fatalf("ip neigh: %v: %s", err, out)
		}
		a := loader.Attachment{Iface: tb.boxIface, Netns: tb.box}
		attachClsact(t, tb.state, a, writeConfig(t, egressConfig), clsact)
		t.Cleanup(func() { loader.Detach(a, tb.state) })

		drop, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "drop_all", Type: ebpf.SchedCLS, License: "MIT",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // TC_ACT_SHOT
		})
		if err != nil {
			t.Fatal(err)
		}
		defer drop.Close()
		kind := statusEgress(t, tb)
		doNetlink(t, tb.box, tb.boxIface, func(l netlink.Link) error {
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
		if err := testenv.Do(tb.peer, func() error {
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
		msg := Frame(withCallID(SIPRequest("INVITE", toNoTag), "Call-ID: dropped@203.0.113.1"))
		sendFromBox(t, tb.box, msg, false)
		waitDialog(t, tb.state, a, classify.CallID(msg))
		if err := <-got; err == nil {
			t.Error("the peer received the INVITE: the program after the egress program never ran")
		}
		return kind
	})
}

// egressModes runs fn with the kernel's own choice of attachment (tcx
// where it has it), and then, when that was tcx, with the clsact fallback
// asked for. On a kernel without tcx the first run is the clsact filter
// already, and once is enough. fn returns how the egress program was
// attached.
func egressModes(t *testing.T, fn func(t *testing.T, clsact bool) string) {
	var kind string
	t.Run("auto", func(t *testing.T) { kind = fn(t, false) })
	if kind != loader.EgressTCX {
		t.Logf("the kernel attached the egress program as %q: no clsact run besides", kind)
		return
	}
	t.Run("clsact", func(t *testing.T) { fn(t, true) })
}

// TestEgressRepinAgain: pins removed again and again under a held link.
// The tcx link whose last pin went is freed a moment later and listed by
// the kernel until then: Repin must take it for gone and attach anew, not
// fail on it.
func TestEgressRepinAgain(t *testing.T) {
	tb := newTestbed(t)
	a := loader.Attachment{Iface: tb.boxIface, Netns: tb.box}
	attachClsact(t, tb.state, a, writeConfig(t, egressConfig), false)
	t.Cleanup(func() { loader.Detach(a, tb.state) })
	held, err := loader.HoldLink(tb.state, a)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for i := 0; i < 10; i++ {
		if err := os.RemoveAll(a.Dir(tb.state)); err != nil {
			t.Fatal(err)
		}
		if _, err := loader.Repin(tb.state, a, held); err != nil {
			t.Fatalf("repin %d: %v", i, err)
		}
	}
	if got, want := ourEgress(t, tb), statusEgress(t, tb); got != want || got == "" {
		t.Errorf("after the repins the interface has egress %q, status says %q", got, want)
	}
}
