package loader

import (
	"fmt"
	"path/filepath"
)

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
