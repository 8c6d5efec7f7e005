package loader

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
	"golang.org/x/sys/unix"
)

// lockTimeout is how long a command waits for another to finish.
const lockTimeout = 10 * time.Second

// Options say how to attach and what the fast path starts with.
type Options struct {
	StateDir string
	Mode     string // auto, native, generic or multi
	// Priority is the run priority in a libxdp dispatcher (multi mode);
	// 0 is DefaultPriority.
	Priority  uint32
	Settings  maps.Settings
	L2TPPorts []uint16
	SIPPorts  []uint16
	Policy    policy.Policy
	// SourceTable is how many sources the per-source table holds; 0 keeps
	// the default of the object (262,144).
	SourceTable uint32
	// DialogTable is how many dialogs the dialog table holds; 0 keeps the
	// object's default.
	DialogTable uint32
	// Access are the static deny and allow lists, AutoDeny the auto-deny
	// settings (zero: off) (docs/design.md, "Access control").
	Access   maps.Access
	AutoDeny maps.AutoDeny
	// DenyTable is how many sources the deny table and the refusal
	// counts hold (access.auto-deny.table); 0 keeps the object's default
	// (65,536).
	DenyTable uint32
	// SIPTCPPorts are the TCP ports a SYN to which is a sip-connect
	// (ports.sip-tcp); none turns the class off.
	SIPTCPPorts []uint16
	// Force replaces another XDP program attached over netlink (not one
	// held by another tool's bpf_link, which only that tool can remove).
	Force bool
	// AgentAddrs are the session agents' addresses (IPv4 mapped into
	// IPv6) and their indexes: the literal ones of the configuration, or
	// all of them, resolved, when the daemon applies.
	AgentAddrs map[netip.Addr]uint32
	// UpdateLink switches a pinned link to a new program in Adopt; nil
	// uses the link's own update. Tests set it to make the switch fail.
	UpdateLink func(link.Link, *ebpf.Program) error
	// Notify, when set, is told what an operator should know of how the
	// filter was attached: auto mode falling back to generic.
	Notify func(msg string)
	// AtStep, when set, is called as Attach reaches each of its steps
	// (StepAttached and those of pinAll): tests kill the process there, to
	// show that an attach stopped anywhere leaves nothing that a detach or
	// another attach cannot remove.
	AtStep func(step string)
	// EgressClsact attaches the egress program as a clsact filter even on
	// a kernel with tcx: what older kernels get, for tests to exercise.
	EgressClsact bool
}

// rejectTable is the size of the rejects table on a machine of cpus: the
// daemon leaves at most three seconds in it, each CPU makes at most 1,024
// records of its own a second (REJECT_NEW_PER_SECOND) and a few of "other
// sources", so four seconds of every CPU's budget always fit, and no
// record waiting for the sweep is pushed out (docs/design.md, "Reject
// records"). Never less than the 65,536 of the object.
func rejectTable(cpus int) uint32 { return uint32(max(65536, cpus*4*1024)) }

// Tables are the sizes of the tables the configuration sizes; 0 keeps
// the object's default.
type Tables struct {
	// Sources is the per-source table's (per-source-table).
	Sources uint32
	// Dialogs is the dialog table's (dialog-table).
	Dialogs uint32
	// Denied is the deny table's and the refusal counts'
	// (access.auto-deny.table).
	Denied uint32
}

// tablesOf are the table sizes o asks for.
func tablesOf(o Options) Tables {
	return Tables{Sources: o.SourceTable, Dialogs: o.DialogTable, Denied: o.DenyTable}
}

// Load loads the XDP program and its maps, unattached, with tables of the
// sizes t (0: the defaults), using the maps of shared in place of its own.
func Load(t Tables, shared map[string]*ebpf.Map) (*bpf.XdpObjects, error) {
	return loadFor(t, shared, nil)
}

// loadFor is Load, and with a target dispatcher loads the program as an
// extension of its first slot, which is how a dispatcher runs it: the
// verifier checks it as the same XDP program, and a link may put it in any
// slot of any dispatcher of the same protocol (docs/design.md, "Sharing an
// interface").
func loadFor(t Tables, shared map[string]*ebpf.Map, target *ebpf.Program) (*bpf.XdpObjects, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("lift memlock limit: %w", err)
	}
	if err := CheckKernel(); err != nil {
		return nil, err
	}
	spec, err := bpf.LoadXdp()
	if err != nil {
		return nil, err
	}
	if target != nil {
		ps := spec.Programs[bpf.XdpProgXdpCac]
		ps.Type, ps.AttachType, ps.AttachTarget, ps.AttachTo = ebpf.Extension, ebpf.AttachNone, target, "prog0"
	}
	if t.Sources > 0 {
		spec.Maps[bpf.XdpMapSources].MaxEntries = t.Sources
	}
	if t.Dialogs > 0 {
		if err := maps.SizeDialogs(spec, t.Dialogs); err != nil {
			return nil, err
		}
	}
	if t.Denied > 0 {
		spec.Maps[bpf.XdpMapDenied].MaxEntries = t.Denied
		spec.Maps[bpf.XdpMapDenyCounts].MaxEntries = t.Denied
	}
	if m := shared[bpf.XdpMapRejects]; m != nil {
		spec.Maps[bpf.XdpMapRejects].MaxEntries = m.MaxEntries() // a pinned table, as it is
	} else if n, err := ebpf.PossibleCPU(); err == nil {
		spec.Maps[bpf.XdpMapRejects].MaxEntries = rejectTable(n)
	}
	var objs bpf.XdpObjects
	if err := spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{MapReplacements: shared}); err != nil {
		if errors.Is(err, ebpf.ErrMapIncompatible) {
			return nil, fmt.Errorf("the interfaces already attached have other map shapes (per-source-table, dialog-table or access.auto-deny.table differs, or another xdpcac version): detach them or use the same configuration: %w", err)
		}
		if target != nil && (errors.Is(err, unix.EPERM) || errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EOPNOTSUPP)) {
			return nil, fmt.Errorf("this kernel refuses extension (freplace) programs, which libxdp's dispatcher runs its programs as (a kernel built without BPF trampolines, CONFIG_FUNCTION_TRACER, refuses them; libxdp then loads a single program without a dispatcher too): attach without mode multi: %w", err)
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the kernel refused the XDP program: %+v", ve)
		}
		return nil, fmt.Errorf("load XDP program: %w", err)
	}
	// The maps only the egress program uses (connections, agent states,
	// egress counters) are bound to the XDP program too, so that the
	// running program names every map of its state: the pins are made
	// again from it (Repin), and an attachment is known as ours by it.
	err = eachMap(&objs.XdpMaps, func(name string, field **ebpf.Map) error {
		if err := objs.XdpCac.BindMap(*field); err != nil {
			return fmt.Errorf("bind the %s map to the XDP program: %w", name, err)
		}
		return nil
	})
	if err != nil {
		objs.Close()
		return nil, err
	}
	return &objs, nil
}

// Attach loads the program, configures it with o, attaches it to the
// interface with a bpf_link and pins it all under o.StateDir. An interface
// attached beside others joins their state (Shared) as it is, limits
// included: Apply changes those. It returns the mode the kernel attached
// in. On any error nothing is left behind.
func Attach(a Attachment, o Options) (mode string, err error) {
	if _, err := xdpFlags(o.Mode); err != nil {
		return "", err
	}
	// A second attach, a missing namespace or interface, or one with
	// another XDP program, is refused before anything, even the state
	// directory, is created; and checked again under the lock.
	// The program of an attach that was killed is no foreign one: it is
	// taken off under the lock.
	dir := filepath.Join(o.StateDir, a.dirName())
	multi, err := wantsMulti(a, o.Mode)
	if err != nil && !errors.Is(err, ErrNoInterface) {
		return "", replaceable(err, o.Force)
	}
	if err := replaceable(checkFree(a, dir, multi), o.Force || hasOrphan(o.StateDir, a)); err != nil {
		return "", err
	}
	if err := checkVLANKeys(a, o.Policy); err != nil {
		return "", err
	}
	lk, err := ensureAndLock(o.StateDir, lockTimeout)
	if err != nil {
		return "", err
	}
	defer lk.unlock()
	defer removeIfEmpty(o.StateDir) // an attach that failed leaves no directory
	if _, err := cleanOrphans(o.StateDir, a); err != nil {
		return "", err
	}
	if err := replaceable(checkFree(a, dir, multi), o.Force); err != nil {
		return "", err
	}
	if o.Force {
		if err := removeForeign(a, multi); err != nil {
			return "", err
		}
	}
	nl, err := linkByName(a.Netns, a.Iface)
	if err != nil {
		return "", err
	}

	// A new attachment joins the state of those already in the directory.
	var shared map[string]*ebpf.Map
	if others, err := List(o.StateDir); err != nil {
		return "", err
	} else if len(others) > 0 {
		if shared, err = sharedMaps(o.StateDir, others[0]); err != nil {
			return "", err
		}
		defer closeMaps(shared)
	}
	var target *ebpf.Program
	if multi {
		if target, err = bareDispatcher(); err != nil {
			return "", err
		}
		defer target.Close()
	}
	objs, err := loadFor(tablesOf(o), shared, target)
	if err != nil {
		return "", err
	}
	defer objs.Close() // the pins hold what must outlive this process
	// The first attachment starts with o; one that joins runs what is in
	// force, and changes nothing for the others even if it fails: Apply
	// puts o in force for all of them afterwards.
	if shared == nil {
		if err := apply(&Pinned{XdpMaps: objs.XdpMaps}, o); err != nil {
			return "", err
		}
	}

	var l link.Link
	if multi {
		if err := joinDispatcher(a, objs.XdpCac, o.Priority, 0); err != nil {
			return "", err
		}
		defer func() {
			if err != nil {
				leaveProgram(a, objs.XdpCac)
			}
		}()
	} else {
		if l, err = attachXDP(a, o, nl, objs.XdpCac); err != nil {
			return "", err
		}
		defer l.Close() // detaches, unless pinned below
	}

	eg, err := startEgress(a, nl.Attrs().Index, objs, o.EgressClsact)
	if err != nil {
		return "", err
	}
	defer eg.close()
	if o.AtStep != nil {
		o.AtStep(StepAttached)
	}
	if err := pinAll(o.StateDir, a, l, objs, eg, o.AtStep); err != nil {
		eg.undo(a)
		return "", err
	}
	if multi {
		return ModeMulti, nil
	}
	mode = "unknown"
	if after, err := linkByName(a.Netns, a.Iface); err == nil && after.Attrs().Xdp != nil {
		mode = attachModeName(after.Attrs().Xdp.AttachMode)
	}
	return mode, nil
}

// checkFree refuses an interface that xdpcac is attached to (its state is
// in dir), that is missing, or that has another XDP program (a
// *foreignProgram, which Force may replace); in multi mode a libxdp
// dispatcher is no other program but one to join.
func checkFree(a Attachment, dir string, multi bool) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("xdpcac is already attached to %s (state in %s): use cacctl detach first", a, dir)
	}
	if multi { // a dispatcher to join, or nothing, or a foreign program
		d, err := dispatcherOn(a)
		d.close()
		return err
	}
	return checkForeign(a)
}

// pinAll pins the link, program and maps, and the egress program, in a
// temporary directory named for a and renames it to a's directory, so the
// attachment appears whole or not at all. A process killed before the
// rename leaves the temporary directory, which names a so that status
// reports it and a detach or attach of a cleans it (cleanOrphans). step,
// when set, is called after each part is pinned (Options.AtStep).
func pinAll(stateDir string, a Attachment, l link.Link, objs *bpf.XdpObjects, eg *egress, step func(string)) error {
	if step == nil {
		step = func(string) {}
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return fmt.Errorf("random name: %w", err)
	}
	tmp := filepath.Join(stateDir, tmpPrefix+hex.EncodeToString(suffix)+"-"+a.dirName())
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	step(StepDirectory)
	pin := func(name string, fn func(string) error) error {
		if err := fn(filepath.Join(tmp, name)); err != nil {
			return fmt.Errorf("pin %s: %w", name, err)
		}
		return nil
	}
	err := eachMap(&objs.XdpMaps, func(name string, m **ebpf.Map) error {
		return pin(name, func(path string) error { return pinFresh(*m, path) })
	})
	if err == nil {
		step(StepMaps)
		err = pin(pinProgram, objs.XdpCac.Pin)
	}
	if err == nil && l != nil { // multi mode pins no link of its own
		step(StepProgram)
		err = pin(pinLink, l.Pin)
	}
	if err == nil {
		step(StepLink)
		err = pinEgress(tmp, eg)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	step(StepEgress)
	if err := os.Rename(tmp, a.Dir(stateDir)); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("move pins into place: %w", err)
	}
	return nil
}

// Detach takes the filter off the interface and removes its state, and
// the state directory with the last attachment. What an attach of the
// interface that was killed left behind goes too (cleanOrphans); with only
// that to remove, Detach removes it and succeeds.
func Detach(a Attachment, stateDir string) error {
	dir := filepath.Join(stateDir, a.dirName())
	notAttached := fmt.Errorf("xdpcac is not attached to %s (no state in %s)", a, dir)
	if _, err := os.Stat(stateDir); err != nil {
		return notAttached
	}
	lk, err := lockStateDir(stateDir, lockTimeout)
	if errors.Is(err, errStateDirGone) {
		return notAttached
	}
	if err != nil {
		return err
	}
	defer lk.unlock()
	defer removeIfEmpty(stateDir)
	cleaned, err := cleanOrphans(stateDir, a)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		if cleaned {
			return nil
		}
		return notAttached
	}

	// The egress program first: should it fail, the attachment is still
	// whole, and a detach again finds it.
	if err := removeEgress(a, dir); err != nil {
		return err
	}
	if pinnedMulti(dir) {
		id, err := pinnedProgID(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		if err := leaveDispatcher(a, id); err != nil {
			return err
		}
	} else if err := detachPinnedLink(a, filepath.Join(dir, pinLink)); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove state of %s: %w", a, err)
	}
	return nil
}

// detachPinnedLink takes the XDP link pinned at path off its interface and
// unpins it.
func detachPinnedLink(a Attachment, path string) error {
	l, err := link.LoadPinnedLink(path, nil)
	if err != nil {
		return fmt.Errorf("open the pinned link of %s: %w", a, err)
	}
	defer l.Close()
	// Detach takes the program off now, even while another process (a
	// running cacctl run) holds the link; with its pin gone and the last
	// descriptor closed, the kernel then destroys the link.
	if err := l.Detach(); err != nil && !errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("detach the link of %s: %w", a, err)
	}
	if err := l.Unpin(); err != nil {
		return fmt.Errorf("unpin link of %s: %w", a, err)
	}
	return nil
}
