package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/bpf"
)

// Adoption reads top to bottom here: Adopt, its multi-mode twin, and what
// they do with the link and the program. The pinned maps' side of it
// (loadUpgrade) is in reshape.go, the egress program's (ensureEgress) in
// egress_adopt.go; the helpers it shares with Attach stay in their files.

// Adopted says what Adopt did.
type Adopted string

// What Adopt can do with an attachment.
const (
	Kept       Adopted = "kept"       // the pinned program is this version's
	Upgraded   Adopted = "upgraded"   // the link now runs this version's program
	Reattached Adopted = "reattached" // the interface had come back; a new link
)

// Adopt takes over an existing attachment with this version's program,
// keeping every pinned map, so counters, buckets and charges carry on:
//
//   - the program is loaded against all the attachment's pinned maps; a map
//     whose shape this version cannot use refuses the upgrade, and nothing
//     changes: a reset of state is never silent;
//   - if the link's interface was removed and has come back (the kernel
//     leaves a pinned XDP link defunct), or the link is on another
//     interface than the one of its name now (renamed, or in a namespace
//     that was deleted and made again), a new link is attached and pinned;
//   - else, if the pinned program differs from this version's, the link is
//     switched to the new program atomically (o.UpdateLink, for tests to
//     fail; nil is the link's own update); on failure the old one stays;
//   - the egress program likewise: switched when it is another version's,
//     attached anew when it is missing (an attachment of a version before
//     it, or an interface that came back).
func Adopt(a Attachment, o Options) (Adopted, error) {
	lk, err := lockStateDir(o.StateDir, lockTimeout)
	if err != nil {
		return "", err
	}
	defer lk.unlock()
	dir := filepath.Join(o.StateDir, a.dirName())
	p, missing, err := openUpgrade(o.StateDir, a)
	if err != nil {
		return "", err
	}
	defer p.Close()
	if pinnedMulti(dir) {
		return adoptMulti(a, o, dir, p, missing)
	}
	objs, err := loadUpgrade(o.StateDir, a, p, missing, nil)
	if err != nil {
		return "", err
	}
	defer objs.Close()

	l, err := link.LoadPinnedLink(filepath.Join(dir, pinLink), nil)
	if err != nil {
		return "", fmt.Errorf("open the pinned link of %s: %w", a, err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		return "", fmt.Errorf("link info of %s: %w", a, err)
	}
	x := info.XDP()
	live := x != nil && x.Ifindex != 0
	if live {
		on, err := onInterface(a, x.Ifindex, info.Program)
		if err != nil {
			return "", err
		}
		if !on {
			// Its interface was renamed, or its namespace deleted and
			// made again, and another took the name: the filter follows
			// the name, with its state, and leaves the other.
			if err := l.Detach(); err != nil && !errors.Is(err, ebpf.ErrNotSupported) {
				return "", fmt.Errorf("take the filter off the interface %s was: %w", a, err)
			}
			live = false
		}
	}
	if !live {
		if err := reattach(a, o, dir, l, objs); err != nil {
			return "", err
		}
		// Its egress program went with the interface too.
		if _, err := ensureEgress(a, o, dir, objs, true); err != nil {
			return Reattached, err
		}
		return Reattached, nil
	}

	// The link's program is what runs, whatever the prog pin says.
	old, err := ebpf.NewProgramFromID(info.Program)
	if err != nil {
		return "", fmt.Errorf("open the running program of %s: %w", a, err)
	}
	defer old.Close()
	same, err := sameProgram(old, objs.XdpCac)
	if err != nil {
		return "", err
	}
	if same {
		return keptOrEgress(a, o, dir, objs)
	}
	update := o.UpdateLink
	if update == nil {
		update = func(l link.Link, p *ebpf.Program) error { return l.Update(p) }
	}
	return upgrade(a, o, dir, objs, func() error { return update(l, objs.XdpCac) })
}

// adoptMulti is Adopt for an attachment in multi mode (docs/design.md,
// "Sharing an interface"), with the same outcomes: the program is loaded
// against the pinned maps, for a dispatcher; if the interface's
// dispatcher runs the pinned program and it is this version's, it is
// kept; if it runs another version's, a new dispatcher with this one in
// its place is swapped in; if no dispatcher of the interface runs it (the
// interface was removed and made again, or a libxdp tool took it out),
// it joins the interface's dispatcher or a new one, and libxdp's pins
// that the old interface left holding it are removed.
func adoptMulti(a Attachment, o Options, dir string, p *Pinned, missing []string) (Adopted, error) {
	target, err := bareDispatcher()
	if err != nil {
		return "", err
	}
	defer target.Close()
	objs, err := loadUpgrade(o.StateDir, a, p, missing, target)
	if err != nil {
		return "", err
	}
	defer objs.Close()
	oldID, err := pinnedProgID(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a, err)
	}
	d, slot, err := multiSlot(a, dir)
	if err != nil {
		return "", err
	}
	defer d.close()

	if slot < 0 {
		if err := joinDispatcher(a, objs.XdpCac, o.Priority, 0); err != nil {
			return "", fmt.Errorf("%s came back: %w", a, err)
		}
		if err := repin(objs.XdpCac, filepath.Join(dir, pinProgram)); err != nil {
			return Reattached, err
		}
		// The old program is in no dispatcher of the interface: what is
		// left of it is pins of an interface gone.
		if err := leaveDispatcher(a, oldID); err != nil {
			return Reattached, err
		}
		if _, err := ensureEgress(a, o, dir, objs, true); err != nil {
			return Reattached, err
		}
		return Reattached, nil
	}

	same, err := sameProgram(d.comps[slot].prog, objs.XdpCac)
	if err != nil {
		return "", err
	}
	if same {
		return keptOrEgress(a, o, dir, objs)
	}
	// A new dispatcher with this version's program in place of the old
	// one's, swapped in atomically.
	return upgrade(a, o, dir, objs, func() error { return joinDispatcher(a, objs.XdpCac, o.Priority, oldID) })
}

// keptOrEgress is what Adopt does with an attachment that runs this
// version's program: it is kept, unless its egress program is another
// version's, or missing, and is switched or attached.
func keptOrEgress(a Attachment, o Options, dir string, objs *bpf.XdpObjects) (Adopted, error) {
	changed, err := ensureEgress(a, o, dir, objs, false)
	if err != nil || !changed {
		return Kept, err
	}
	return Upgraded, nil
}

// upgrade runs this version's program in place of another's with sw (an
// atomic switch that leaves the old program running when it fails), then
// pins it and switches or attaches the egress program.
func upgrade(a Attachment, o Options, dir string, objs *bpf.XdpObjects, sw func() error) (Adopted, error) {
	if err := sw(); err != nil {
		return "", fmt.Errorf("switch %s to this version's program: %w; the running program stays", a, err)
	}
	if err := repin(objs.XdpCac, filepath.Join(dir, pinProgram)); err != nil {
		return Upgraded, err
	}
	if _, err := ensureEgress(a, o, dir, objs, false); err != nil {
		return Upgraded, err
	}
	return Upgraded, nil
}

// xdpAttachedMulti is XDP_ATTACHED_MULTI (kernel ABI): programs in more
// than one mode, whose IDs the kernel then reports per mode only.
const xdpAttachedMulti = 4

// onInterface reports whether a link on ifindex running prog is on the
// interface that has a's name in a's namespace now. The index alone does
// not tell: the interface renamed away keeps it, and a namespace made
// again numbers its interfaces afresh, so a new interface may have the
// index of the old one in the namespace that is gone. So the program the
// interface runs must be the link's too.
func onInterface(a Attachment, ifindex uint32, prog ebpf.ProgramID) (bool, error) {
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return false, err
	}
	x := nl.Attrs().Xdp
	if uint32(nl.Attrs().Index) != ifindex || x == nil || !x.Attached {
		return false, nil
	}
	return x.AttachMode == xdpAttachedMulti || x.ProgId == uint32(prog), nil
}

// reattach attaches a new link to an interface that came back, in place of
// the defunct one, with the pinned maps.
func reattach(a Attachment, o Options, dir string, old link.Link, objs *bpf.XdpObjects) error {
	if err := replaceable(checkForeign(a), o.Force); err != nil {
		return err
	}
	if o.Force {
		if err := removeForeign(a, false); err != nil {
			return err
		}
	}
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return err
	}
	l, err := attachXDP(a, o, nl, objs.XdpCac)
	if err != nil {
		return fmt.Errorf("%s came back: %w", a, err)
	}
	defer l.Close() // detaches, unless pinned below
	path := filepath.Join(dir, pinLink)
	if err := old.Unpin(); err != nil {
		return fmt.Errorf("unpin the defunct link of %s: %w", a, err)
	}
	if err := l.Pin(path); err != nil {
		return fmt.Errorf("pin the new link of %s: %w", a, err)
	}
	return repin(objs.XdpCac, filepath.Join(dir, pinProgram))
}

// sameProgram compares the kernel's tags: a hash of the instructions.
func sameProgram(a, b *ebpf.Program) (bool, error) {
	ai, err := a.Info()
	if err != nil {
		return false, fmt.Errorf("program info: %w", err)
	}
	bi, err := b.Info()
	if err != nil {
		return false, fmt.Errorf("program info: %w", err)
	}
	return ai.Tag == bi.Tag, nil
}

// repin points the pin at path to p.
func repin(p *ebpf.Program, path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unpin %s: %w", path, err)
	}
	if err := p.Pin(path); err != nil {
		return fmt.Errorf("pin %s: %w", path, err)
	}
	return nil
}

// NeedsAttach reports whether a needs Attach (no state) or Adopt (its
// pinned link is defunct, or on another interface of that name): what a
// link event asks, cheaply, before loading anything.
func NeedsAttach(stateDir string, a Attachment) bool {
	if !IsAttached(stateDir, a) {
		return true
	}
	if dir := a.Dir(stateDir); pinnedMulti(dir) {
		d, slot, err := multiSlot(a, dir)
		d.close()
		return err != nil || slot < 0 // not in the interface's dispatcher
	}
	l, err := link.LoadPinnedLink(filepath.Join(stateDir, a.dirName(), pinLink), nil)
	if err != nil {
		return true
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil || info.XDP() == nil || info.XDP().Ifindex == 0 {
		return true
	}
	on, err := onInterface(a, info.XDP().Ifindex, info.Program)
	return err == nil && !on
}

// HoldLink opens the pinned link of a, so that the filter stays attached
// for as long as the holder keeps it, even if the pin goes (a bpffs
// unmounted, a state directory removed by hand).
func HoldLink(stateDir string, a Attachment) (link.Link, error) {
	if dir := a.Dir(stateDir); pinnedMulti(dir) {
		return holdMulti(a, dir)
	}
	l, err := link.LoadPinnedLink(filepath.Join(stateDir, a.dirName(), pinLink), nil)
	if err != nil {
		return nil, fmt.Errorf("hold the link of %s: %w", a, err)
	}
	return l, nil
}
