package loader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// ModeMulti is the mode that shares the interface through a libxdp
// dispatcher (docs/design.md, "Sharing an interface").
const ModeMulti = "multi"

// wantsMulti says whether a attaches through a dispatcher: asked for, or
// in auto mode on an interface that runs one already.
func wantsMulti(a Attachment, mode string) (bool, error) {
	if mode == ModeMulti {
		return true, nil
	}
	if mode != "" && mode != "auto" {
		return false, nil
	}
	d, err := dispatcherOn(a)
	var f *foreignProgram
	if errors.As(err, &f) {
		return false, nil // refused as any other program, unless multi was asked for
	}
	if err != nil || d == nil {
		return false, err
	}
	d.close()
	return true, nil
}

// dispatcherOn opens the libxdp dispatcher that a's interface runs: nil
// when it runs nothing, a *foreignProgram error when it runs another
// program (which multi mode cannot share).
func dispatcherOn(a Attachment) (*dispatcher, error) {
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return nil, err
	}
	x := nl.Attrs().Xdp
	if x == nil || !x.Attached {
		return nil, nil
	}
	d, err := openDispatcher(x.ProgId, nl.Attrs().Index)
	if errors.Is(err, errNotDispatcher) {
		return nil, &foreignProgram{a: a, id: x.ProgId, mode: x.AttachMode, notLibxdp: true}
	}
	return d, err
}

// modeFlags are the netlink flags that replace a program attached in
// IFLA_XDP_ATTACHED mode m: a replace must name the same mode.
func modeFlags(m uint32) uint32 {
	switch m {
	case 1:
		return unix.XDP_FLAGS_DRV_MODE
	case 2:
		return unix.XDP_FLAGS_SKB_MODE
	}
	return 0
}

// setXDP attaches prog (-1: nothing) to ifindex over netlink, as libxdp
// does; with expected >= 0 only in place of that program (XDP_FLAGS_REPLACE),
// so that a dispatcher another tool changed meanwhile is never overwritten.
func setXDP(ns string, ifindex, prog, expected int, flags uint32) error {
	u32 := func(v int) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(v)) }
	return inNetns(ns, func() error {
		req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Index = int32(ifindex)
		req.AddData(msg)
		attrs := nl.NewRtAttr(unix.IFLA_XDP|unix.NLA_F_NESTED, nil)
		attrs.AddRtAttr(nl.IFLA_XDP_FD, u32(prog))
		if expected >= 0 {
			flags |= unix.XDP_FLAGS_REPLACE
			attrs.AddRtAttr(unix.IFLA_XDP_EXPECTED_FD, u32(expected))
		} else {
			flags |= unix.XDP_FLAGS_UPDATE_IF_NOEXIST
		}
		attrs.AddRtAttr(nl.IFLA_XDP_FLAGS, u32(int(flags)))
		req.AddData(attrs)
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
}

// swap puts a dispatcher for comps on the interface in place of old (nil:
// none), or takes old off when comps is empty, and moves libxdp's pins to
// match: the new directory is whole before the interface runs it, and the
// old one goes after.
func swap(a Attachment, nl netlink.Link, old *dispatcher, comps []component) error {
	ifindex := nl.Attrs().Index
	var flags uint32
	expected := -1
	if old != nil {
		expected = old.prog.FD()
		flags = modeFlags(nl.Attrs().Xdp.AttachMode)
	}
	if len(comps) == 0 {
		if err := setXDP(a.Netns, ifindex, -1, expected, flags); err != nil {
			return fmt.Errorf("take the dispatcher off %s: %w", a, err)
		}
		return unpinDispatcher(pinDir(ifindex, old.id))
	}
	b, err := buildDispatcher(comps)
	if err != nil {
		return err
	}
	defer b.close() // the pins hold what stays
	dir, err := b.pin(ifindex)
	if err != nil {
		return err
	}
	err = setXDP(a.Netns, ifindex, b.prog.FD(), expected, flags)
	if err != nil && old == nil && errors.Is(err, unix.ERANGE) {
		// As attachXDP: a veth refuses native XDP at a jumbo MTU.
		err = setXDP(a.Netns, ifindex, b.prog.FD(), expected, unix.XDP_FLAGS_SKB_MODE)
	}
	if err != nil {
		unpinDispatcher(dir)
		return fmt.Errorf("attach the new dispatcher to %s: %w", a, err)
	}
	if old != nil {
		return unpinDispatcher(pinDir(ifindex, old.id))
	}
	return nil
}

// ourComponent is xdpcac's program as a dispatcher runs it.
func ourComponent(p *ebpf.Program, prio uint32) (component, error) {
	info, err := p.Info()
	if err != nil {
		return component{}, fmt.Errorf("program info: %w", err)
	}
	id, _ := info.ID()
	if prio == 0 {
		prio = DefaultPriority
	}
	return component{prog: p, id: id, name: info.Name, prio: prio, actions: chainPass}, nil
}

// joinDispatcher adds prog (loaded for a dispatcher, loadFor) to the
// dispatcher of a's interface, or to a new one, in place of the program
// with id replace when it is there (an upgrade), at priority prio (0:
// DefaultPriority). Under libxdp's lock.
func joinDispatcher(a Attachment, prog *ebpf.Program, prio uint32, replace ebpf.ProgramID) error {
	lk, err := libxdpLock()
	if err != nil {
		return err
	}
	defer lk.Close()
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return err
	}
	old, err := dispatcherOn(a)
	if err != nil {
		return err
	}
	defer old.close()
	ours, err := ourComponent(prog, prio)
	if err != nil {
		return err
	}
	var comps []component
	if old != nil {
		for _, c := range old.comps {
			if replace != 0 && c.id == replace {
				continue
			}
			comps = append(comps, c)
		}
	}
	return swap(a, nl, old, append(comps, ours))
}

// leaveDispatcher takes the program with id out of the dispatcher of a's
// interface, leaving the others running (or nothing, when it was alone),
// and removes libxdp's pins that an interface gone left holding it.
func leaveDispatcher(a Attachment, id ebpf.ProgramID) error {
	lk, err := libxdpLock()
	if err != nil {
		return err
	}
	defer lk.Close()
	keep := ""
	nl, err := linkByName(a.Netns, a.Iface)
	if err == nil {
		old, err := dispatcherOn(a)
		var f *foreignProgram
		if err != nil && !errors.As(err, &f) {
			return err
		}
		if old != nil {
			defer old.close()
			keep = pinDir(old.ifindex, old.id)
			if i := old.find(id); i >= 0 {
				rest := append(append([]component(nil), old.comps[:i]...), old.comps[i+1:]...)
				if err := swap(a, nl, old, rest); err != nil {
					return err
				}
			}
		}
	} else if !errors.Is(err, ErrNoInterface) {
		return err
	}
	for _, dir := range staleDispatchDirs(id, keep) {
		if err := unpinDispatcher(dir); err != nil {
			return err
		}
	}
	return nil
}

// pinnedMulti reports whether the attachment in dir is in multi mode: its
// program is an extension of a dispatcher, and it pins no XDP link of its
// own (libxdp's pins hold the dispatcher's links, which a rebuild
// replaces).
func pinnedMulti(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, pinLink)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	p, err := ebpf.LoadPinnedProgram(filepath.Join(dir, pinProgram), nil)
	if err != nil {
		return false
	}
	defer p.Close()
	return p.Type() == ebpf.Extension
}

// pinnedProgID is the ID of the program pinned in dir.
func pinnedProgID(dir string) (ebpf.ProgramID, error) {
	p, err := ebpf.LoadPinnedProgram(filepath.Join(dir, pinProgram), nil)
	if err != nil {
		return 0, fmt.Errorf("open the pinned program: %w", err)
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return 0, fmt.Errorf("program info: %w", err)
	}
	id, _ := info.ID()
	return id, nil
}

// multiSlot finds the attachment in dir in the dispatcher of a's
// interface: the dispatcher and the slot (-1 when it is not there).
func multiSlot(a Attachment, dir string) (*dispatcher, int, error) {
	id, err := pinnedProgID(dir)
	if err != nil {
		return nil, -1, err
	}
	d, err := dispatcherOn(a)
	var f *foreignProgram
	switch {
	case errors.As(err, &f) || errors.Is(err, ErrNoInterface):
		return nil, -1, nil // no dispatcher holds it
	case err != nil:
		// Not "not there": a dispatcher rebuilt under the read, say.
		// Taken for absent, a take-over would add a second xdpcac.
		return nil, -1, err
	case d == nil:
		return nil, -1, nil
	}
	return d, d.find(id), nil
}

// holdMulti opens the link of the dispatcher's slot that runs the
// attachment in dir: a rebuild by libxdp replaces it, and the daemon then
// holds one that keeps nothing on the interface.
func holdMulti(a Attachment, dir string) (link.Link, error) {
	d, slot, err := multiSlot(a, dir)
	if err != nil {
		return nil, err
	}
	defer d.close()
	if slot < 0 {
		return nil, fmt.Errorf("%s: xdpcac's program is in no dispatcher of the interface", a)
	}
	return link.LoadPinnedLink(filepath.Join(pinDir(d.ifindex, d.id), fmt.Sprintf("prog%d-link", slot)), nil)
}

// bareDispatcher loads a dispatcher with no slot in use: the target that
// xdpcac's program is loaded against before it is linked into the real one.
func bareDispatcher() (*ebpf.Program, error) {
	b, err := buildDispatcher(nil)
	if err != nil {
		return nil, err
	}
	return b.prog, nil
}

// leaveProgram takes prog out of a's dispatcher again: an attach that
// failed after it joined.
func leaveProgram(a Attachment, prog *ebpf.Program) {
	if c, err := ourComponent(prog, 0); err == nil {
		leaveDispatcher(a, c.id)
	}
}
