package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/bpf"
	"golang.org/x/sys/unix"
)

// The multi-program protocol of libxdp (xdp-tools' lib/libxdp/protocol.org),
// version 2, as far as another tool reads it (docs/design.md, "Sharing an
// interface"): a dispatcher program named xdp_dispatcher with one frozen
// map holding its run configuration, and under <bpffs>/xdp/ a directory
// dispatch-IFINDEX-PROGID with progN-link and progN-prog for each slot.
const (
	dispatcherName    = "xdp_dispatcher"
	dispatcherMagic   = 236 // 'X' + 'D' + 'P'
	dispatcherVersion = 2
	dispatcherSlots   = 10
	// slotEmpty is the action of a slot nothing replaces; its bit is set
	// in every slot's chain call actions so that such a slot goes on.
	slotEmpty = 31
	// DefaultPriority is xdpcac's run priority in a dispatcher: after
	// xdp-filter (10) and other firewalls, so that a frame they drop never
	// takes from an admission budget, and before libxdp's default (50),
	// where programs that redirect or consume frames (AF_XDP, forwarding)
	// would take a session's first packet past the limits.
	DefaultPriority = 40
	// chainPass lets a frame xdpcac passes go on to the next program; a
	// drop, or a ZLB sent back with XDP_TX, ends the chain.
	chainPass = 1 << 2 // XDP_PASS
)

// libxdpDir is libxdp's directory on bpffs: LIBXDP_BPFFS, as libxdp reads
// it, or /sys/fs/bpf, and xdp below it.
func libxdpDir() string {
	root := os.Getenv("LIBXDP_BPFFS")
	if root == "" {
		root = bpffsRoot
	}
	return filepath.Join(root, "xdp")
}

// libxdpLock takes libxdp's own lock, an flock on its directory, so that
// xdpcac and a libxdp tool never rebuild one interface's dispatcher at
// once.
func libxdpLock() (*os.File, error) {
	dir := libxdpDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create libxdp's directory: %w", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open libxdp's lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("take libxdp's lock on %s: %w", dir, err)
	}
	return f, nil
}

// component is one program of a dispatcher, with its run configuration.
type component struct {
	prog    *ebpf.Program
	id      ebpf.ProgramID
	name    string
	prio    uint32
	actions uint32 // chain call actions, without slotEmpty's bit
	flags   uint32 // BPF_F_XDP_HAS_FRAGS or 0
}

// dispatcher is a libxdp dispatcher found on an interface.
type dispatcher struct {
	prog    *ebpf.Program
	id      ebpf.ProgramID
	ifindex int
	conf    bpf.DispatcherXdpDispatcherConfig
	comps   []component
}

func (d *dispatcher) close() {
	if d == nil {
		return
	}
	d.prog.Close()
	for _, c := range d.comps {
		c.prog.Close()
	}
}

// pinDir is where libxdp keeps the dispatcher's component pins.
func pinDir(ifindex int, id ebpf.ProgramID) string {
	return filepath.Join(libxdpDir(), fmt.Sprintf("dispatch-%d-%d", ifindex, id))
}

// errNotDispatcher says a program is no libxdp dispatcher.
var errNotDispatcher = errors.New("not a libxdp dispatcher")

// openDispatcher reads the dispatcher with program id on ifindex and its
// components from their pins, as libxdp does; a program that is no
// dispatcher is errNotDispatcher.
func openDispatcher(id uint32, ifindex int) (*dispatcher, error) {
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return nil, fmt.Errorf("open XDP program %d: %w", id, err)
	}
	d := &dispatcher{prog: prog, id: ebpf.ProgramID(id), ifindex: ifindex}
	if err := d.readConf(); err != nil {
		prog.Close()
		return nil, err
	}
	dir := pinDir(ifindex, d.id)
	for i := 0; i < int(d.conf.NumProgsEnabled); i++ {
		p, err := ebpf.LoadPinnedProgram(filepath.Join(dir, fmt.Sprintf("prog%d-prog", i)), nil)
		if err != nil {
			d.close()
			return nil, fmt.Errorf("dispatcher %d has no pinned program for slot %d (in %s): %w", id, i, dir, err)
		}
		c := component{prog: p, prio: d.conf.RunPrios[i], actions: d.conf.ChainCallActions[i] &^ (1 << slotEmpty), flags: d.conf.ProgramFlags[i]}
		if info, err := p.Info(); err == nil {
			c.id, _ = info.ID()
			c.name = info.Name
		}
		d.comps = append(d.comps, c)
	}
	return d, nil
}

// readConf checks the protocol's marks (name, one read-only map of one
// entry, magic and version) and reads the run configuration.
func (d *dispatcher) readConf() error {
	info, err := d.prog.Info()
	if err != nil {
		return fmt.Errorf("program info: %w", err)
	}
	ids, _ := info.MapIDs()
	if info.Name != dispatcherName || len(ids) != 1 {
		return errNotDispatcher
	}
	m, err := ebpf.NewMapFromID(ids[0])
	if err != nil {
		return fmt.Errorf("open the dispatcher's configuration: %w", err)
	}
	defer m.Close()
	size := binary.Size(d.conf)
	if m.KeySize() != 4 || int(m.ValueSize()) != size || m.MaxEntries() != 1 {
		return fmt.Errorf("%w: configuration of %d bytes", errNotDispatcher, m.ValueSize())
	}
	buf := make([]byte, size)
	if err := m.Lookup(uint32(0), &buf); err != nil {
		return fmt.Errorf("read the dispatcher's configuration: %w", err)
	}
	if err := binary.Read(bytes.NewReader(buf), binary.NativeEndian, &d.conf); err != nil {
		return fmt.Errorf("decode the dispatcher's configuration: %w", err)
	}
	if d.conf.Magic != dispatcherMagic {
		return errNotDispatcher // a version 1 dispatcher has no magic: libxdp too old
	}
	if d.conf.DispatcherVersion != dispatcherVersion {
		return fmt.Errorf("a libxdp dispatcher of version %d (xdpcac speaks %d): unload it with xdp-loader first", d.conf.DispatcherVersion, dispatcherVersion)
	}
	return nil
}

// find returns the index of the component with program id, or -1.
func (d *dispatcher) find(id ebpf.ProgramID) int {
	for i, c := range d.comps {
		if c.id == id {
			return i
		}
	}
	return -1
}

// built is a new dispatcher loaded with its components linked in order.
type built struct {
	prog  *ebpf.Program
	comps []component
	links []link.Link
}

func (b *built) close() {
	for _, l := range b.links {
		l.Close()
	}
	b.prog.Close()
}

// buildDispatcher loads a dispatcher for comps, in libxdp's run order
// (priority, then name), and links each component to its slot. Until it
// is attached nothing runs it.
func buildDispatcher(comps []component) (*built, error) {
	if len(comps) > dispatcherSlots {
		return nil, fmt.Errorf("a dispatcher runs at most %d programs", dispatcherSlots)
	}
	comps = append([]component(nil), comps...)
	sort.SliceStable(comps, func(i, j int) bool {
		if comps[i].prio != comps[j].prio {
			return comps[i].prio < comps[j].prio
		}
		return comps[i].name < comps[j].name
	})
	conf := bpf.DispatcherXdpDispatcherConfig{Magic: dispatcherMagic, DispatcherVersion: dispatcherVersion, NumProgsEnabled: uint8(len(comps))}
	for i, c := range comps {
		conf.ChainCallActions[i] = c.actions | 1<<slotEmpty
		conf.RunPrios[i] = c.prio
		conf.ProgramFlags[i] = c.flags
		// xdpcac's program has no frags support: the dispatcher is loaded
		// without it, as libxdp does when any component lacks it.
	}
	spec, err := bpf.LoadDispatcher()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables[bpf.DispatcherVarConf].Set(conf); err != nil {
		return nil, fmt.Errorf("set the dispatcher's configuration: %w", err)
	}
	var objs bpf.DispatcherObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("load the dispatcher: %w", err)
	}
	objs.DispatcherMaps.Close() // the program holds its configuration
	objs.DispatcherVariables = bpf.DispatcherVariables{}
	b := &built{prog: objs.XdpDispatcher, comps: comps}
	for i, c := range comps {
		l, err := link.AttachFreplace(b.prog, fmt.Sprintf("prog%d", i), c.prog)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("link %s to slot %d of the new dispatcher: %w", c.name, i, err)
		}
		b.links = append(b.links, l)
	}
	return b, nil
}

// pin pins b's links and programs in libxdp's layout for ifindex.
func (b *built) pin(ifindex int) (string, error) {
	info, err := b.prog.Info()
	if err != nil {
		return "", fmt.Errorf("dispatcher info: %w", err)
	}
	id, _ := info.ID()
	dir := pinDir(ifindex, id)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	for i := range b.comps {
		if err := b.links[i].Pin(filepath.Join(dir, fmt.Sprintf("prog%d-link", i))); err != nil {
			unpinDispatcher(dir)
			return "", fmt.Errorf("pin slot %d's link: %w", i, err)
		}
		if err := pinProgFresh(b.comps[i].prog, filepath.Join(dir, fmt.Sprintf("prog%d-prog", i))); err != nil {
			unpinDispatcher(dir)
			return "", fmt.Errorf("pin slot %d's program: %w", i, err)
		}
	}
	return dir, nil
}

// unpinDispatcher removes a dispatcher's pin directory: with its links'
// pins gone, the old dispatcher goes when nothing else holds it.
func unpinDispatcher(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-link") || strings.HasSuffix(e.Name(), "-prog") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// pinProgFresh pins p through a new handle, so that a program opened from
// a pin gets a second pin rather than having its first moved.
func pinProgFresh(p *ebpf.Program, path string) error {
	info, err := p.Info()
	if err != nil {
		return fmt.Errorf("program info: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return errors.New("program has no ID")
	}
	fresh, err := ebpf.NewProgramFromID(id)
	if err != nil {
		return fmt.Errorf("open program %d: %w", id, err)
	}
	defer fresh.Close()
	return fresh.Pin(path)
}

// staleDispatchDirs lists libxdp's pin directories, other than keep,
// that hold program id: what an interface that went away left. xdpcac
// loads a program of its own for each interface, so a directory holding
// it and not its interface's dispatcher's is left over.
func staleDispatchDirs(id ebpf.ProgramID, keep string) []string {
	dirs, _ := filepath.Glob(filepath.Join(libxdpDir(), "dispatch-*-*"))
	var out []string
	for _, dir := range dirs {
		if dir == keep {
			continue
		}
		pins, _ := filepath.Glob(filepath.Join(dir, "prog*-prog"))
		for _, pin := range pins {
			p, err := ebpf.LoadPinnedProgram(pin, nil)
			if err != nil {
				continue
			}
			info, err := p.Info()
			p.Close()
			if err == nil {
				if pid, _ := info.ID(); pid == id {
					out = append(out, dir)
					break
				}
			}
		}
	}
	return out
}
