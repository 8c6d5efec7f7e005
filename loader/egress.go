package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/maps"
	"golang.org/x/sys/unix"
)

// The egress program (bpf/tc_dialogs.c) goes with the XDP program of every
// attachment: it learns the dialogs the SIP server behind the filter opens
// itself (docs/design.md, "Dialogs the server opens"). It is attached with
// tcx where the kernel has it (Linux 6.6), else as a bpf filter on a
// clsact qdisc (Debian 12's 6.1).

// Pins of the egress program in an attachment's directory.
const (
	pinEgressProg = "egress-prog"
	pinEgressLink = "egress-link" // tcx: the link
	// clsact: a directory, there when the attach added the qdisc, so that
	// detach removes the qdisc it added and no other.
	pinEgressQdisc = "egress-clsact"
)

// How an attachment's egress program is attached, as Status names it.
const (
	EgressTCX    = "tcx"
	EgressClsact = "clsact"
	EgressNone   = "none"    // an attachment of a version before the egress program
	EgressGone   = "missing" // pinned, but not on the interface (cacctl run attaches it again)
)

// The legacy filter: its place among the clsact qdisc's egress filters,
// and its name, by which detach knows it is ours.
const (
	egressPriority   = 0xcac
	egressHandle     = 1
	egressFilterName = "xdpcac-dialogs"
)

// egress is an attachment's egress program on its interface: just
// attached and not pinned yet, or opened from its pins.
type egress struct {
	prog  *ebpf.Program
	link  link.Link // tcx; nil for clsact
	qdisc bool      // clsact: the qdisc is ours
}

func (e *egress) kind() string {
	if e.link != nil {
		return EgressTCX
	}
	return EgressClsact
}

// close releases the handles: a tcx link that is not pinned detaches.
func (e *egress) close() {
	if e == nil {
		return
	}
	if e.link != nil {
		e.link.Close()
	}
	e.prog.Close()
}

// loadEgress loads the egress program with the maps of an XDP object in
// place of its own, every one of them (the dialog table, ports, clock,
// tunnels, agents, connection buckets, transactions): what one program
// learns is what the other reads.
func loadEgress(x *bpf.XdpMaps) (*bpf.TcObjects, error) {
	spec, err := bpf.LoadTc()
	if err != nil {
		return nil, fmt.Errorf("egress program: %w", err)
	}
	replace, err := EgressMaps(spec, x)
	if err != nil {
		return nil, err
	}
	var objs bpf.TcObjects
	err = spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{MapReplacements: replace})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the kernel refused the egress program: %+v", ve)
		}
		return nil, fmt.Errorf("load the egress program: %w", err)
	}
	return &objs, nil
}

// EgressMaps sizes the egress program's dialog table as the XDP object's
// and returns the XDP object's maps to load it with, one for every map the
// egress program has: what one program learns is what the other reads.
func EgressMaps(spec *ebpf.CollectionSpec, x *bpf.XdpMaps) (map[string]*ebpf.Map, error) {
	if err := maps.SizeDialogs(spec, maps.Dialogs(x.Dialogs)); err != nil {
		return nil, err
	}
	replace := map[string]*ebpf.Map{}
	err := eachMap(x, func(name string, field **ebpf.Map) error {
		if _, ok := spec.Maps[name]; ok && *field != nil {
			replace[name] = *field
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for name := range spec.Maps {
		if _, ok := replace[name]; !ok && !strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("egress program: the XDP object has no %s map to share", name)
		}
	}
	return replace, nil
}

// attachEgress attaches prog to the egress of interface ifindex of a:
// tcx, or, where the kernel has none or clsact is asked for, a filter on a
// clsact qdisc. The program is cloned: the caller keeps its own.
func attachEgress(a Attachment, ifindex int, prog *ebpf.Program, clsact bool) (*egress, error) {
	own, err := prog.Clone()
	if err != nil {
		return nil, fmt.Errorf("egress program: %w", err)
	}
	e := &egress{prog: own}
	if !clsact {
		err = inNetns(a.Netns, func() error {
			var err error
			e.link, err = link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: prog, Attach: ebpf.AttachTCXEgress})
			return err
		})
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, ebpf.ErrNotSupported) {
			own.Close()
			return nil, fmt.Errorf("attach the egress program to %s with tcx: %w", a, err)
		}
	}
	err = inNetns(a.Netns, func() error {
		var err error
		e.qdisc, err = addEgressFilter(ifindex, prog)
		return err
	})
	if err != nil {
		own.Close()
		return nil, fmt.Errorf("attach the egress program to %s with a clsact filter: %w", a, err)
	}
	return e, nil
}

func clsactQdisc(ifindex int) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{
		LinkIndex: ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT,
	}, QdiscType: "clsact"}
}

func egressFilter(ifindex int, prog *ebpf.Program) *netlink.BpfFilter {
	return &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{
		LinkIndex: ifindex, Parent: netlink.HANDLE_MIN_EGRESS, Handle: egressHandle,
		Priority: egressPriority, Protocol: unix.ETH_P_ALL,
	}, Fd: prog.FD(), Name: egressFilterName, DirectAction: true}
}

// addEgressFilter puts prog on the egress of ifindex as a direct-action
// bpf filter, in this network namespace, adding a clsact qdisc when there
// is none (and saying so); a filter of ours left there is replaced, one of
// another tool at its place refuses. On an error it leaves nothing behind.
func addEgressFilter(ifindex int, prog *ebpf.Program) (added bool, err error) {
	nl, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return false, fmt.Errorf("interface %d: %w", ifindex, err)
	}
	qdiscs, err := netlink.QdiscList(nl)
	if err != nil {
		return false, fmt.Errorf("list qdiscs: %w", err)
	}
	has := false
	for _, q := range qdiscs {
		has = has || q.Type() == "clsact"
	}
	if has {
		// Replace a filter of ours, never another tool's in its place.
		filters, err := netlink.FilterList(nl, netlink.HANDLE_MIN_EGRESS)
		if err != nil {
			return false, fmt.Errorf("list the egress filters: %w", err)
		}
		for _, f := range filters {
			at := f.Attrs()
			if b, ok := f.(*netlink.BpfFilter); at.Priority == egressPriority && at.Handle == egressHandle && (!ok || b.Name != egressFilterName) {
				return false, fmt.Errorf("another tool's %s filter holds egress priority %d, handle %d: remove it", f.Type(), egressPriority, egressHandle)
			}
		}
	} else {
		if err := netlink.QdiscAdd(clsactQdisc(ifindex)); err != nil {
			return false, fmt.Errorf("add a clsact qdisc: %w", err)
		}
		added = true
	}
	if err := netlink.FilterReplace(egressFilter(ifindex, prog)); err != nil {
		if added {
			netlink.QdiscDel(clsactQdisc(ifindex))
		}
		return false, fmt.Errorf("add the egress filter: %w", err)
	}
	return added, nil
}

// ourFilters are the egress filters of ours on the interface of a, if it
// is there; list errors say why it cannot tell. An interface or network
// namespace that is gone has none: its filters went with it.
func ourFilters(a Attachment) ([]*netlink.BpfFilter, error) {
	var out []*netlink.BpfFilter
	err := inGoneOK(a.Netns, func() error {
		nl, err := netlink.LinkByName(a.Iface)
		if err != nil {
			return nil // gone: its filters went with it
		}
		filters, err := netlink.FilterList(nl, netlink.HANDLE_MIN_EGRESS)
		if err != nil {
			return fmt.Errorf("list the egress filters of %s: %w", a, err)
		}
		for _, f := range filters {
			if b, ok := f.(*netlink.BpfFilter); ok && b.Name == egressFilterName && b.Priority == egressPriority {
				out = append(out, b)
			}
		}
		return nil
	})
	return out, err
}

// removeEgressFilters removes the egress filters of ours from the
// interface of a, and the clsact qdisc when the attach added it and no
// filter is left on it (another tool's would keep it).
func removeEgressFilters(a Attachment, qdisc bool) error {
	ours, err := ourFilters(a)
	if err != nil {
		return err
	}
	return inGoneOK(a.Netns, func() error {
		for _, f := range ours {
			if err := netlink.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("remove the egress filter of %s: %w", a, err)
			}
		}
		nl, err := netlink.LinkByName(a.Iface)
		if !qdisc || err != nil {
			return nil
		}
		for _, parent := range []uint32{netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS} {
			if left, err := netlink.FilterList(nl, parent); err != nil || len(left) > 0 {
				return nil // in use, or cannot tell: it stays
			}
		}
		if err := netlink.QdiscDel(clsactQdisc(nl.Attrs().Index)); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("remove the clsact qdisc of %s: %w", a, err)
		}
		return nil
	})
}

// inGoneOK is inNetns for what a namespace that is gone makes moot.
func inGoneOK(ns string, fn func() error) error {
	if ns != "" {
		h, err := netns.GetFromName(ns)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err == nil {
			h.Close()
		}
	}
	return inNetns(ns, fn)
}

// undo takes an egress program that is not pinned off its interface.
func (e *egress) undo(a Attachment) {
	if e.link != nil {
		e.link.Close() // a tcx link nobody pinned detaches
		e.link = nil
		return
	}
	removeEgressFilters(a, e.qdisc)
}

// pinEgress pins e in dir (a directory being built, or the attachment's).
func pinEgress(dir string, e *egress) error {
	if err := e.prog.Pin(filepath.Join(dir, pinEgressProg)); err != nil {
		return fmt.Errorf("pin %s: %w", pinEgressProg, err)
	}
	if e.link != nil {
		if err := e.link.Pin(filepath.Join(dir, pinEgressLink)); err != nil {
			return fmt.Errorf("pin %s: %w", pinEgressLink, err)
		}
	}
	if e.qdisc {
		if err := os.Mkdir(filepath.Join(dir, pinEgressQdisc), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("mark the clsact qdisc ours: %w", err)
		}
	}
	return nil
}

// openEgress opens the pinned egress program of the attachment in dir;
// nil when there is none (a version before the egress program pinned it).
func openEgress(dir string) (*egress, error) {
	prog, err := ebpf.LoadPinnedProgram(filepath.Join(dir, pinEgressProg), nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the pinned egress program: %w", err)
	}
	e := &egress{prog: prog}
	e.link, err = link.LoadPinnedLink(filepath.Join(dir, pinEgressLink), nil)
	if errors.Is(err, os.ErrNotExist) {
		e.link, err = nil, nil
	}
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("open the pinned egress link: %w", err)
	}
	_, err = os.Stat(filepath.Join(dir, pinEgressQdisc))
	e.qdisc = err == nil
	return e, nil
}

// inPlace reports whether e is on the interface of a now: a tcx link not
// left defunct by its interface going, or a filter of ours.
func (e *egress) inPlace(a Attachment) (bool, error) {
	if e.link != nil {
		info, err := e.link.Info()
		if err != nil {
			return false, fmt.Errorf("egress link info of %s: %w", a, err)
		}
		nl, err := linkByName(a.Netns, a.Iface)
		return err == nil && info.TCX() != nil && info.TCX().Ifindex == uint32(nl.Attrs().Index), nil
	}
	ours, err := ourFilters(a)
	return len(ours) > 0, err
}

// egressKind names how the attachment in dir has its egress program, as
// Status shows it.
func egressKind(a Attachment, dir string) (string, error) {
	e, err := openEgress(dir)
	if err != nil || e == nil {
		return EgressNone, err
	}
	defer e.close()
	ok, err := e.inPlace(a)
	if err != nil || !ok {
		return EgressGone, err
	}
	return e.kind(), nil
}

// removeEgress takes the egress program of the attachment in dir off its
// interface and unpins it; nothing there is nothing to do.
func removeEgress(a Attachment, dir string) error {
	e, err := openEgress(dir)
	if err != nil || e == nil {
		return err
	}
	defer e.close()
	if e.link != nil {
		// As the XDP link: off now, even while a daemon holds it.
		if err := e.link.Detach(); err != nil && !errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("detach the egress link of %s: %w", a, err)
		}
		if err := e.link.Unpin(); err != nil {
			return fmt.Errorf("unpin the egress link of %s: %w", a, err)
		}
	} else if err := removeEgressFilters(a, e.qdisc); err != nil {
		return err
	}
	if err := e.prog.Unpin(); err != nil {
		return fmt.Errorf("unpin the egress program of %s: %w", a, err)
	}
	return nil
}
