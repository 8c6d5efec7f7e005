package loader

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/maps"
)

// pinCleared names the pin, in an attachment's directory, of what clear
// counters kept (docs/design.md, "Clearing counters"). A bpffs holds no
// regular files, so it is a map of one element holding the JSON of a
// clearing; a detach removes it with the directory.
const pinCleared = "counters_cleared"

// clearing is what clear counters keeps of one attachment: its counters at
// that moment, which every show subtracts, and when. JSON, whose fields
// are named and whose classes and reasons keep their numbers, so that a
// version that adds counters reads what an older one kept (a counter
// missing is a base of zero).
type clearing struct {
	At time.Time `json:"at"`
	// StatsMap is the ID of the stats map the counters were read from: a
	// base read from another map (pins made afresh) is stale.
	StatsMap ebpf.MapID `json:"stats_map_id"`
	Stats    maps.Stats `json:"stats"`
}

// ClearCounters makes the counters of p that show commands and top present
// count from zero at time at. It keeps the counters of the moment as their
// base and never writes the stats map, whose counters the metrics export
// and which must never go back (docs/design.md, "Clearing counters").
func ClearCounters(stateDir string, p *Pinned, at time.Time) error {
	raw, err := maps.ReadStats(p.Stats)
	if err != nil {
		return err
	}
	id, err := mapID(p.Stats)
	if err != nil {
		return fmt.Errorf("stats map: %w", err)
	}
	b, err := json.Marshal(clearing{At: at, StatsMap: id, Stats: raw})
	if err != nil {
		return fmt.Errorf("encode the counters cleared: %w", err)
	}
	return pinBlob(filepath.Join(p.Dir(stateDir), pinCleared), b)
}

// ShownStats reads the counters of p as an operator reads them: since the
// last clear counters, whose time is in ClearedAt, or since the attach
// when there was none or its base is stale.
func ShownStats(stateDir string, p *Pinned) (AttachmentStats, error) {
	raw, err := maps.ReadStats(p.Stats)
	if err != nil {
		return AttachmentStats{}, err
	}
	out := AttachmentStats{Attachment: p.Attachment, Stats: raw}
	c, ok, err := readClearing(p.Dir(stateDir))
	if err != nil || !ok {
		return out, err
	}
	id, err := mapID(p.Stats)
	if err != nil {
		return out, fmt.Errorf("stats map: %w", err)
	}
	if id != c.StatsMap {
		return out, nil // another map counts now: the base is stale
	}
	if shown, ok := raw.Since(c.Stats); ok {
		out.Stats, out.ClearedAt = shown, c.At
	}
	return out, nil
}

// Total sums the counters of per, as for every interface together.
func Total(per []AttachmentStats) maps.Stats {
	var t maps.Stats
	for _, a := range per {
		t.Add(a.Stats)
	}
	return t
}

// readClearing reads what the last clear counters kept in dir; ok is false
// when the counters were never cleared.
func readClearing(dir string) (c clearing, ok bool, err error) {
	b, err := readBlob(filepath.Join(dir, pinCleared))
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, false, fmt.Errorf("decode the counters kept by clear counters (clear them again): %w", err)
	}
	return c, true, nil
}

// pinBlob pins at path a map of one element holding b, padded with spaces
// (JSON ignores them) to whole words. It pins under a name of its own
// first and renames that over path, so that a reader finds the old blob
// or the new, never none or half of one.
func pinBlob(path string, b []byte) error {
	size := (len(b) + 7) &^ 7
	buf := append(b, bytes.Repeat([]byte{' '}, size-len(b))...)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "counters_clear", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(size), MaxEntries: 1})
	if err != nil {
		return fmt.Errorf("make the map of the counters cleared: %w", err)
	}
	defer m.Close()
	if err := m.Update(uint32(0), buf, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write the counters cleared: %w", err)
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	// bpffs refuses dots in names.
	tmp := path + "_tmp_" + hex.EncodeToString(suffix)
	if err := m.Pin(tmp); err != nil {
		return fmt.Errorf("pin the counters cleared: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put the counters cleared in place: %w", err)
	}
	return nil
}

// readBlob reads what pinBlob pinned at path; an error wraps
// fs.ErrNotExist when nothing is.
func readBlob(path string) ([]byte, error) {
	m, err := ebpf.LoadPinnedMap(path, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", filepath.Base(path), err)
	}
	defer m.Close()
	if m.Type() != ebpf.Array || m.KeySize() != 4 {
		return nil, fmt.Errorf("%s is not a map of one element", filepath.Base(path))
	}
	var b []byte
	if err := m.Lookup(uint32(0), &b); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return b, nil
}
