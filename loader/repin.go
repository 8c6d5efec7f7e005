package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/bpf"
)

// ErrDetached is what Repin says of a link that is no longer attached:
// detached by hand, or its interface gone. Its state is not pinned again.
var ErrDetached = errors.New("the link is no longer attached to its interface")

// kernelNameLen is how much of a map's name the kernel keeps
// (BPF_OBJ_NAME_LEN less the NUL).
const kernelNameLen = 15

// Repin pins an attachment again from the link its holder kept open, when
// its pins are gone: the bpffs unmounted and mounted again, or the state
// directory removed by hand. Every map the running program uses is pinned
// under its own name, so the filter's state (buckets, counters, charges)
// is the same as before and the CLI and a restarted daemon find it. The
// egress program is pinned again too: a clsact filter outlives the pins
// and is pinned as it runs; a tcx link does not (nothing else holds it)
// and is attached anew. It does nothing, and says so, when the pins are
// there.
func Repin(stateDir string, a Attachment, held link.Link) (pinned bool, err error) {
	if IsAttached(stateDir, a) {
		return false, nil
	}
	lk, err := ensureAndLock(stateDir, lockTimeout)
	if err != nil {
		return false, err
	}
	defer lk.unlock()
	if IsAttached(stateDir, a) {
		return false, nil
	}
	return true, pinAgain(stateDir, a, held)
}

func pinAgain(stateDir string, a Attachment, held link.Link) error {
	info, err := held.Info()
	if err != nil {
		return fmt.Errorf("link of %s: %w", a, err)
	}
	if info.Type == link.TracingType {
		// A slot's link of a libxdp dispatcher: the dispatcher and its
		// pins are libxdp's, and a rebuild may have replaced the link.
		return fmt.Errorf("%s runs in a libxdp dispatcher (mode multi), whose pins are not made again from a held link: cacctl detach and attach it again to pin its state afresh", a)
	}
	if x := info.XDP(); x == nil || x.Ifindex == 0 {
		return fmt.Errorf("%s: %w", a, ErrDetached)
	}
	// Fresh handles: pinning a handle opened from a pin would try to move
	// that pin, which is gone.
	l, err := link.NewFromID(info.ID)
	if err != nil {
		return fmt.Errorf("open link %d of %s: %w", info.ID, a, err)
	}
	defer l.Close()
	objs, err := objectsOf(info.Program)
	if err != nil {
		return fmt.Errorf("program of %s: %w", a, err)
	}
	defer objs.Close()
	eg, fresh, err := runningEgress(a, objs)
	if err != nil {
		return err
	}
	defer eg.close()
	if err := pinAll(stateDir, a, l, objs, eg, nil); err != nil {
		if fresh {
			eg.undo(a)
		}
		return err
	}
	return nil
}

// objectsOf opens a running program and every map of ours it uses, by ID.
func objectsOf(progID ebpf.ProgramID) (*bpf.XdpObjects, error) {
	objs := &bpf.XdpObjects{}
	prog, err := ebpf.NewProgramFromID(progID)
	if err != nil {
		return nil, fmt.Errorf("open program %d: %w", progID, err)
	}
	objs.XdpCac = prog
	fields := map[string]**ebpf.Map{}
	eachMap(&objs.XdpMaps, func(name string, field **ebpf.Map) error {
		fields[name[:min(len(name), kernelNameLen)]] = field
		return nil
	})
	pi, err := prog.Info()
	if err != nil {
		objs.Close()
		return nil, fmt.Errorf("program %d: %w", progID, err)
	}
	ids, _ := pi.MapIDs()
	for _, id := range ids {
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			objs.Close()
			return nil, fmt.Errorf("open map %d: %w", id, err)
		}
		mi, err := m.Info()
		field, ours := fields[mi.Name]
		if err != nil || !ours || *field != nil {
			m.Close() // .rodata and the like are not pinned
			continue
		}
		*field = m
	}
	err = eachMap(&objs.XdpMaps, func(name string, field **ebpf.Map) error {
		if *field == nil {
			return fmt.Errorf("program %d has no %s map: it is not xdpcac's", progID, name)
		}
		return nil
	})
	if err != nil {
		objs.Close()
		return nil, err
	}
	return objs, nil
}
