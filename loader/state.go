package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/maps"
)

// Names of the pins in an attachment's directory besides its maps, which
// are pinned under their own names.
const (
	pinLink    = "link"
	pinProgram = "prog"
)

// eachMap calls fn with the name and field of every map of the program,
// so that pinning and opening never miss one.
func eachMap(m *bpf.XdpMaps, fn func(name string, field **ebpf.Map) error) error {
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Tag.Get("ebpf")
		field, ok := v.Field(i).Addr().Interface().(**ebpf.Map)
		if name == "" || !ok {
			continue
		}
		if err := fn(name, field); err != nil {
			return err
		}
	}
	return nil
}

// Attachment names one interface that has the filter, as its state
// directory does: the interface, and its network namespace if not ours.
type Attachment struct {
	Iface string
	Netns string
}

func (a Attachment) String() string {
	if a.Netns == "" {
		return a.Iface
	}
	return a.Iface + " in network namespace " + a.Netns
}

// Key names the attachment in JSON output: IFACE, or NETNS:IFACE.
func (a Attachment) Key() string {
	if a.Netns == "" {
		return a.Iface
	}
	return a.Netns + ":" + a.Iface
}

// AttachmentOfKey is the attachment of netns that key names (Key): a
// daemon's interfaces are all in its one namespace.
func AttachmentOfKey(key, netns string) Attachment {
	if netns == "" {
		return Attachment{Iface: key}
	}
	return Attachment{Iface: strings.TrimPrefix(key, netns+":"), Netns: netns}
}

// Dir is where the pins of a live in stateDir.
func (a Attachment) Dir(stateDir string) string { return filepath.Join(stateDir, a.dirName()) }

// Generation names the attachment's pins as they are now: a detach and an
// attach of the interface (or pins made again) make a new directory, and
// what was opened before holds maps no program uses any more.
func (a Attachment) Generation(stateDir string) (uint64, error) {
	fi, err := os.Stat(a.Dir(stateDir))
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no inode", a.Dir(stateDir))
	}
	return st.Ino, nil
}

// dirName is Key with '.', ':' and '%' escaped as %XX: bpffs refuses names
// with dots, and VLAN sub-interfaces such as eth0.100 have them.
func (a Attachment) dirName() string {
	if a.Netns == "" {
		return escapeName(a.Iface)
	}
	return escapeName(a.Netns) + ":" + escapeName(a.Iface)
}

func parseDirName(name string) Attachment {
	ns, iface, ok := strings.Cut(name, ":")
	if !ok {
		return Attachment{Iface: unescapeName(name)}
	}
	return Attachment{Netns: unescapeName(ns), Iface: unescapeName(iface)}
}

func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '.', ':', '%':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func unescapeName(s string) string {
	out, err := url.PathUnescape(s)
	if err != nil {
		return s // not written by escapeName; shown as it is
	}
	return out
}

// tmpPrefix starts the names of directories still being built; no
// attachment's name starts with a colon.
const tmpPrefix = ":tmp-"

// List returns the attachments with state in stateDir.
func List(stateDir string) ([]Attachment, error) {
	entries, err := os.ReadDir(stateDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state directory: %w", err)
	}
	var out []Attachment
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), tmpPrefix) {
			out = append(out, parseDirName(e.Name()))
		}
	}
	return out, nil
}

// IsAttached reports whether stateDir holds the state of a.
func IsAttached(stateDir string, a Attachment) bool {
	_, err := os.Stat(filepath.Join(stateDir, a.dirName()))
	return err == nil
}

// Pinned are the maps of one attachment, opened from their pins.
type Pinned struct {
	Attachment
	bpf.XdpMaps
}

// Close releases the maps; the pins stay.
func (p *Pinned) Close() { p.XdpMaps.Close() }

// Open opens the pinned maps of an attachment; one of addedMaps that an
// attachment of an earlier version lacks is nil.
func Open(stateDir string, a Attachment) (*Pinned, error) {
	p, _, err := openUpgrade(stateDir, a)
	return p, err
}

// addedMaps are the maps of this version that an attachment of an earlier
// one may lack: an upgrade makes them, empty, and pins them beside the
// rest (upgradePins). Any other map missing is an error.
var addedMaps = map[string]bool{
	bpf.XdpMapL2tpTunnels: true,
	// Egress admission.
	bpf.XdpMapAgentEgress: true, bpf.XdpMapAgentState: true, bpf.XdpMapConnectionBuckets: true,
	bpf.XdpMapEgressTxns: true, bpf.XdpMapEgressCounts: true, bpf.XdpMapEgressBudget: true, bpf.XdpMapEgressRefused: true,
	// Authentication rules.
	bpf.XdpMapUserAccounts0: true, bpf.XdpMapUserAccounts1: true, bpf.XdpMapUserScratch: true,
	// Capacity.
	bpf.XdpMapSessions: true, bpf.XdpMapSessionBudget: true, bpf.XdpMapSessionLimits: true,
	bpf.XdpMapSessionsTaken: true, bpf.XdpMapSessionsFreed: true,
	// Fleet.
	bpf.XdpMapLeases: true,
	// Reject records of each CPU.
	bpf.XdpMapRejectScratch: true,
	// SIP in one pass.
	bpf.XdpMapSipIndex: true,
	// Recent Call-IDs, before a refused INVITE's lookups (recent.h).
	bpf.XdpMapRecentCalls: true,
}

// openUpgrade is Open for an upgrade: a map of addedMaps that the
// attachment has no pin of is left nil and named in missing.
func openUpgrade(stateDir string, a Attachment) (p *Pinned, missing []string, err error) {
	dir := filepath.Join(stateDir, a.dirName())
	p = &Pinned{Attachment: a}
	err = eachMap(&p.XdpMaps, func(name string, field **ebpf.Map) error {
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if errors.Is(err, fs.ErrNotExist) && addedMaps[name] {
			missing = append(missing, name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("open %s map of %s: %w", name, a, err)
		}
		*field = m
		return nil
	})
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	return p, missing, nil
}

// AttachmentStats are the counters of one attachment.
type AttachmentStats struct {
	Attachment
	Stats maps.Stats
	// ClearedAt is when clear counters last made Stats count from zero
	// (ShownStats); zero when they count from the attach.
	ClearedAt time.Time
}

// EachPinned opens every attachment in stateDir in turn for fn, skipping
// one that is detached while we read; it takes no lock, so reading never
// waits for a command that changes things. The maps are closed when fn
// returns.
func EachPinned(stateDir string, fn func(*Pinned) error) error {
	atts, err := List(stateDir)
	if err != nil {
		return err
	}
	for _, a := range atts {
		p, err := Open(stateDir, a)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = fn(p)
		p.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// ReadAllStats reads the counters of every attachment in stateDir as an
// operator reads them: since its last clear counters (ShownStats). The
// metrics read the maps themselves, never from a clear.
func ReadAllStats(stateDir string) ([]AttachmentStats, error) {
	var out []AttachmentStats
	err := EachPinned(stateDir, func(p *Pinned) error {
		s, err := ShownStats(stateDir, p)
		out = append(out, s)
		return err
	})
	return out, err
}

// ReadAllRejects reads the reject records of every attachment in stateDir.
func ReadAllRejects(stateDir string) ([]maps.Reject, error) {
	var out []maps.Reject
	err := EachPinned(stateDir, func(p *Pinned) error {
		r, err := maps.ReadRejects(maps.RejectTablesOf(&p.XdpMaps))
		for i := range r {
			r[i].Interface = p.Key() // its ifindex means something only in its namespace
		}
		if err == nil {
			err = maps.NameRules(maps.PolicyMapsOf(&p.XdpMaps), r)
		}
		out = append(out, r...)
		return err
	})
	return out, err
}

// CallAdmissionState is what `show call admission statistics` reads: the
// shared state once, the counters of every attachment summed.
type CallAdmissionState struct {
	Attachments   []Attachment
	CallAdmission policy.CallAdmission
	Inputs        policy.Inputs
	Rings         [cac.NumCallTypes]policy.ChargeRing
	Stats         maps.Stats
}

// ReadCallAdmission reads the call admission state of stateDir; with
// nothing attached it is empty.
func ReadCallAdmission(stateDir string) (CallAdmissionState, error) {
	return ReadCallAdmissionOf(Fresh(stateDir))
}

// ReadCallAdmissionOf is ReadCallAdmission from pins, which may be held
// open between reads (PinCache).
func ReadCallAdmissionOf(pins Pins) (CallAdmissionState, error) {
	var st CallAdmissionState
	first := true
	err := pins.Each(func(p *Pinned) error {
		s, err := maps.ReadStats(p.Stats)
		if err != nil {
			return err
		}
		st.Stats.Add(s)
		st.Attachments = append(st.Attachments, p.Attachment)
		if !first {
			return nil // the rest is shared
		}
		first = false
		if st.CallAdmission, err = maps.ReadCallAdmission(maps.PolicyMapsOf(&p.XdpMaps)); err != nil {
			return err
		}
		if st.Inputs, err = maps.ReadInputs(maps.InputMapsOf(&p.XdpMaps)); err != nil {
			return err
		}
		rings, err := maps.ReadChargeRings(p.ChargeRings)
		if err == nil {
			st.Rings = *rings
		}
		return err
	})
	return st, err
}
