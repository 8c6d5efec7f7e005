package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
)

// ownMaps are the maps each attachment has for itself: its counters, its
// reject records, which name its interface, and their budget of new
// records, so a flood on one interface leaves the others theirs. Every other map (limits,
// buckets, per-source table, charge rings, measurements, ports, settings)
// is one for the whole state directory, shared by every attachment in it:
// a BRAS has one call admission budget and one class rate, however many
// access interfaces it has.
var ownMaps = map[string]bool{bpf.XdpMapStats: true, bpf.XdpMapRejects: true, bpf.XdpMapRejectBudget: true}

// Shared reports whether a map is shared by every attachment of a state
// directory.
func Shared(name string) bool { return !ownMaps[name] }

// sharedMaps opens the shared maps of an attachment, for a new one to use.
func sharedMaps(stateDir string, a Attachment) (map[string]*ebpf.Map, error) {
	p, err := Open(stateDir, a)
	if err != nil {
		return nil, err
	}
	out := map[string]*ebpf.Map{}
	err = eachMap(&p.XdpMaps, func(name string, field **ebpf.Map) error {
		if Shared(name) {
			out[name] = *field
			*field = nil // out holds it now
		}
		return nil
	})
	p.Close()
	return out, err
}

func closeMaps(ms map[string]*ebpf.Map) {
	for _, m := range ms {
		m.Close()
	}
}

// pinFresh pins m at path through a new handle: a map opened from a pin
// would move that pin rather than add one.
func pinFresh(m *ebpf.Map, path string) error {
	info, err := m.Info()
	if err != nil {
		return fmt.Errorf("map info: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return fmt.Errorf("map has no ID (kernel older than 4.13)")
	}
	fresh, err := ebpf.NewMapFromID(id)
	if err != nil {
		return fmt.Errorf("open map %d: %w", id, err)
	}
	defer fresh.Close()
	return fresh.Pin(path)
}

// mapID identifies a map, so that what attachments share is written once.
func mapID(m *ebpf.Map) (ebpf.MapID, error) {
	info, err := m.Info()
	if err != nil {
		return 0, fmt.Errorf("map info: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return 0, fmt.Errorf("map has no ID")
	}
	return id, nil
}

// ErrNothingAttached is what OpenShared says of a state directory with no
// attachment.
var ErrNothingAttached = errors.New("no interface attached yet")

// OpenShared opens the maps of an attachment of stateDir, for the maps all
// its attachments share (measurements, charges, agents); its own counters
// are that attachment's only.
func OpenShared(stateDir string) (*Pinned, error) {
	atts, err := List(stateDir)
	if err != nil {
		return nil, err
	}
	if len(atts) == 0 {
		return nil, ErrNothingAttached
	}
	return Open(stateDir, atts[0])
}
