package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// foreignProgram is another XDP program on the interface.
type foreignProgram struct {
	a    Attachment
	id   uint32
	mode uint32 // IFLA_XDP_ATTACHED
	// notLibxdp says multi mode was asked for, and the program is no
	// libxdp dispatcher to join.
	notLibxdp bool
}

func (f *foreignProgram) Error() string {
	if f.notLibxdp {
		return fmt.Sprintf("%s runs an XDP program (%s) that is no libxdp dispatcher: multi mode shares an interface only with libxdp programs (xdp-loader, xdp-filter); detach it first, or replace it with --force; nothing was changed", f.a, describeProg(f.id))
	}
	return fmt.Sprintf("%s already has an XDP program (%s): detach it first, or replace it with --force; nothing was changed", f.a, describeProg(f.id))
}

// checkForeign refuses an interface that is missing or has an XDP program.
func checkForeign(a Attachment) error {
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return err
	}
	if x := nl.Attrs().Xdp; x != nil && x.Attached {
		return &foreignProgram{a: a, id: x.ProgId, mode: x.AttachMode}
	}
	return nil
}

// replaceable passes a foreign program when force is set, to be removed
// under the lock; every other refusal stands.
func replaceable(err error, force bool) error {
	var f *foreignProgram
	if force && errors.As(err, &f) {
		return nil
	}
	return err
}

// removeForeign removes another program attached over netlink (--force).
// A libxdp dispatcher is never removed: its programs belong to other
// tools, and evicting it is what sharing the interface is for not doing
// (docs/design.md, "Sharing an interface"). In multi mode xdpcac joins
// it; in another mode the attach is refused.
func removeForeign(a Attachment, multi bool) error {
	err := checkForeign(a)
	var f *foreignProgram
	if !errors.As(err, &f) {
		return err
	}
	if d, derr := dispatcherOn(a); derr == nil && d != nil {
		d.close()
		if multi {
			return nil
		}
		return fmt.Errorf("%s runs a libxdp dispatcher (%s), whose programs --force does not evict: attach in mode auto or multi to share the interface, or take its programs off with xdp-loader unload first; nothing was changed", a, describeProg(f.id))
	}
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return err
	}
	// Detaching needs the mode it was attached in.
	flags := map[uint32]int{1: unix.XDP_FLAGS_DRV_MODE, 2: unix.XDP_FLAGS_SKB_MODE, 3: unix.XDP_FLAGS_HW_MODE}[f.mode]
	err = inNetns(a.Netns, func() error { return netlink.LinkSetXdpFdWithFlags(nl, -1, flags) })
	if errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("%s: its XDP program (%s) is held by another tool's bpf_link, which --force cannot remove: stop that tool; nothing was changed", a, describeProg(f.id))
	}
	if err != nil {
		return fmt.Errorf("remove the XDP program (%s) of %s: %w", describeProg(f.id), a, err)
	}
	return nil
}

func describeProg(id uint32) string {
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return fmt.Sprintf("id %d", id)
	}
	defer p.Close()
	if info, err := p.Info(); err == nil && info.Name != "" {
		return fmt.Sprintf("id %d, %s", id, info.Name)
	}
	return fmt.Sprintf("id %d", id)
}
