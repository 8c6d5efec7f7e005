package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/bpf"
	"golang.org/x/sys/unix"
)

// ensureEgress gives the attachment in dir this version's egress program,
// against the maps of x, when Adopt takes it over: one in place that runs
// another version is switched over atomically (the tcx link updated, or
// the filter replaced); one that is not there (an attachment of a version
// before it, a filter removed by hand, or gone is set when the interface
// came back without it) is attached and pinned anew. It reports whether it
// changed anything.
func ensureEgress(a Attachment, o Options, dir string, x *bpf.XdpObjects, gone bool) (bool, error) {
	tc, err := loadEgress(&x.XdpMaps)
	if err != nil {
		return false, err
	}
	defer tc.Close()
	cur, err := openEgress(dir)
	if err != nil {
		return false, err
	}
	defer cur.close()
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return false, err
	}
	if cur != nil && !gone {
		ok, err := cur.inPlace(a)
		if err != nil {
			return false, err
		}
		if ok {
			return switchEgress(a, dir, cur, nl.Attrs().Index, tc.TcDialogs)
		}
	}
	eg, err := attachEgress(a, nl.Attrs().Index, tc.TcDialogs, o.EgressClsact)
	if err != nil {
		return false, err
	}
	defer eg.close()
	if cur != nil { // the new one in place of the pins of the old
		if cur.link != nil {
			if err := cur.link.Unpin(); err != nil {
				eg.undo(a)
				return false, fmt.Errorf("unpin the defunct egress link of %s: %w", a, err)
			}
		}
		if err := cur.prog.Unpin(); err != nil {
			eg.undo(a)
			return false, fmt.Errorf("unpin the egress program of %s: %w", a, err)
		}
		if !eg.qdisc {
			os.Remove(filepath.Join(dir, pinEgressQdisc))
		}
	}
	if err := pinEgress(dir, eg); err != nil {
		eg.undo(a)
		return false, err
	}
	return true, nil
}

// switchEgress puts prog in place of the egress program cur runs, unless
// it is the same, and pins it.
func switchEgress(a Attachment, dir string, cur *egress, ifindex int, prog *ebpf.Program) (bool, error) {
	same, err := sameProgram(cur.prog, prog)
	if err != nil || same {
		return false, err
	}
	if cur.link != nil {
		err = cur.link.Update(prog)
	} else {
		err = inNetns(a.Netns, func() error { return netlink.FilterReplace(egressFilter(ifindex, prog)) })
	}
	if err != nil {
		return false, fmt.Errorf("switch the egress program of %s to this version's: %w; the running one stays", a, err)
	}
	return true, repin(prog, filepath.Join(dir, pinEgressProg))
}

// Attach and Repin start or find the egress program with what follows.

// startEgress loads the egress program against an XDP object's maps and
// attaches it to interface ifindex of a, unpinned.
func startEgress(a Attachment, ifindex int, x *bpf.XdpObjects, clsact bool) (*egress, error) {
	tc, err := loadEgress(&x.XdpMaps)
	if err != nil {
		return nil, err
	}
	defer tc.Close() // attachEgress keeps a handle of its own
	return attachEgress(a, ifindex, tc.TcDialogs, clsact)
}

// runningEgress finds the egress program of ours on the interface of a,
// for Repin: the tcx link or clsact filter that survived its pins. With
// none (a tcx link goes with its last pin or handle), it attaches a new
// one against the maps of x; fresh says so, for the caller to undo.
func runningEgress(a Attachment, x *bpf.XdpObjects) (e *egress, fresh bool, err error) {
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return nil, false, err
	}
	if e, err := tcxEgress(a, nl.Attrs().Index); err != nil || e != nil {
		return e, false, err
	}
	ours, err := ourFilters(a)
	if err != nil {
		return nil, false, err
	}
	if len(ours) > 0 {
		prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(ours[0].Id))
		if err != nil {
			return nil, false, fmt.Errorf("open the egress program of %s: %w", a, err)
		}
		// Whether the qdisc was ours went with the pins: it stays.
		return &egress{prog: prog}, false, nil
	}
	e, err = startEgress(a, nl.Attrs().Index, x, false)
	return e, err == nil, err
}

// tcxEgress finds a tcx link of ours on the egress of ifindex; nil when
// there is none or the kernel has no tcx.
func tcxEgress(a Attachment, ifindex int) (*egress, error) {
	var res *link.QueryResult
	err := inNetns(a.Netns, func() error {
		var err error
		res, err = link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: ebpf.AttachTCXEgress})
		return err
	})
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) {
		return nil, nil // a kernel before tcx: no such attach type
	}
	if err != nil {
		return nil, fmt.Errorf("query the egress programs of %s: %w", a, err)
	}
	for _, p := range res.Programs {
		id, ok := p.LinkID()
		prog, err := ebpf.NewProgramFromID(p.ID)
		if err != nil || !ok {
			continue
		}
		info, err := prog.Info()
		if err != nil || info.Name != bpf.TcProgTcDialogs {
			prog.Close()
			continue
		}
		l, err := link.NewFromID(id)
		if errors.Is(err, os.ErrNotExist) {
			// A link whose last pin just went is freed a moment later,
			// and listed until then: it is going, not ours to keep.
			prog.Close()
			continue
		}
		if err != nil {
			prog.Close()
			return nil, fmt.Errorf("open egress link %d of %s: %w", id, a, err)
		}
		return &egress{prog: prog, link: l}, nil
	}
	return nil, nil
}
