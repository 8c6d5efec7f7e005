package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/maps"
	"golang.org/x/sys/unix"
)

// What an upgrade (Adopt) does with the pinned maps: loads this version
// against them, makes afresh the ones it reshaped, joins the shared ones
// an upgrade of a sibling made first, and pins the ones it adds.

// loadUpgrade loads this version's program against the pinned maps of the
// attachment (for the target dispatcher, if any) and pins the maps it
// adds or reshapes: a shared one another attachment of the state
// directory already has in this version's shape (an upgrade of it went
// first) is joined, any other made afresh. A map this version adds is
// pinned before the program that uses it runs: the pins are whole
// whatever happens after.
func loadUpgrade(stateDir string, a Attachment, p *Pinned, missing []string, target *ebpf.Program) (*bpf.XdpObjects, error) {
	dir := a.Dir(stateDir)
	missing, err := reshape(p, missing)
	if err != nil {
		return nil, err
	}
	joined, err := joinSiblings(stateDir, a, p, missing)
	if err != nil {
		return nil, err
	}
	objs, err := loadAgainst(p, target)
	if errors.Is(err, ebpf.ErrMapIncompatible) {
		return nil, fmt.Errorf("%s: a map pinned in %s has another shape than this version of xdpcac uses (%w); upgrading would lose its state, so nothing was changed: keep the running version, or start afresh with cacctl detach and attach", a, dir, err)
	}
	if err != nil {
		return nil, err
	}
	if err := upgradePins(dir, objs, missing); err != nil {
		objs.Close()
		return nil, err
	}
	if slices.Contains(missing, bpf.XdpMapRecentCalls) && !joined[bpf.XdpMapRecentCalls] {
		if err := markRecent(objs.RecentCalls); err != nil {
			objs.Close()
			return nil, err
		}
	}
	return objs, nil
}

// reshapedMaps are maps whose shape a version changed while what they
// hold lasts seconds: an upgrade from a pin of another shape makes the map
// afresh and pins it in place of the old one, which the old program keeps
// writing until the link switches. The rejects table took the CPU into its
// key (docs/design.md, "Reject records"); the records of the last seconds
// in the old table are lost, their rejects still counted in the stats.
//
// The dialog table became an array of sets (docs/design.md, "Dialogs"):
// the dialogs up at an upgrade from a hash-map table are forgotten, and
// their in-dialog requests held by the sip-indialog limits, as a dialog
// evicted from a full table is. So are those up at an upgrade from a
// version whose ways held no sides, bucket or flags ("Dialogs bound to
// their peers").
//
// A CPU's SIP index (sip_index.h) took the transaction it hashed, and then
// the Call-ID alone: it holds only the message the CPU reads, so nothing
// is lost.
//
// The table of refused INVITE transactions came to be keyed by Call-ID
// ("Retransmissions"): the retransmissions of INVITEs refused in the last
// seconds before an upgrade are judged as new ones, and most likely
// refused again.
//
// A fleet's lease took the expiry of its newest grant ("Fleet"): a lease
// made afresh holds nothing, and refuses its level's calls until the
// daemon of the new version grants it again, a renewal later; what the
// old one held is lost to the fleet, never spent twice.
//
// A class (sip-connect) and a reason (denied) were added ("SIP
// connections", "Access control"): the counters, limits and buckets are
// per class and per reason. The limits are written again by the apply
// that follows every upgrade; the class and environment buckets start
// full, as at an attach; the counters start at zero, as after clear
// counters, and their rate metrics see a reset.
var reshapedMaps = map[string]bool{bpf.XdpMapRejects: true, bpf.XdpMapDialogs: true, bpf.XdpMapSipIndex: true,
	bpf.XdpMapRefused: true, bpf.XdpMapLeases: true, bpf.XdpMapStats: true, bpf.XdpMapLimits: true,
	bpf.XdpMapBuckets: true}

// reshape closes the pinned maps of p that this version uses in another
// shape, leaves them nil and names them in missing, for loadUpgrade to
// make afresh.
func reshape(p *Pinned, missing []string) ([]string, error) {
	spec, err := bpf.LoadXdp()
	if err != nil {
		return nil, err
	}
	err = eachMap(&p.XdpMaps, func(name string, field **ebpf.Map) error {
		m, want := *field, spec.Maps[name]
		if m == nil || !reshapedMaps[name] || want == nil {
			return nil
		}
		if m.Type() == want.Type && m.KeySize() == want.KeySize && m.ValueSize() == want.ValueSize {
			return nil
		}
		m.Close()
		*field = nil
		missing = append(missing, name)
		return nil
	})
	return missing, err
}

// joinSiblings puts in p, for each shared map named in missing, the one
// another attachment of stateDir has pinned in this version's shape, and
// says which it found. Without it every attachment's upgrade would make
// its own: interfaces that share one budget would each keep their own
// dialogs, sessions or leases from then on.
func joinSiblings(stateDir string, a Attachment, p *Pinned, missing []string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, name := range missing {
		want[name] = Shared(name)
	}
	others, err := List(stateDir)
	if err != nil {
		return nil, err
	}
	spec, err := bpf.LoadXdp()
	if err != nil {
		return nil, err
	}
	joined := map[string]bool{}
	err = eachMap(&p.XdpMaps, func(name string, field **ebpf.Map) error {
		if !want[name] || spec.Maps[name] == nil {
			return nil
		}
		for _, b := range others {
			if b == a {
				continue
			}
			m, err := ebpf.LoadPinnedMap(filepath.Join(b.Dir(stateDir), name), nil)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("open %s of %s: %w", name, b, err)
			}
			if s := spec.Maps[name]; m.Type() != s.Type || m.KeySize() != s.KeySize || m.ValueSize() != s.ValueSize {
				m.Close() // b is still of the version before: its map is not this one's
				continue
			}
			if *field != nil {
				(*field).Close()
			}
			*field = m
			joined[name] = true
			return nil
		}
		return nil
	})
	return joined, err
}

// loadAgainst loads this version's program with every map of an
// attachment in place of its own: nothing new is allocated, and a map this
// version cannot use fails with ebpf.ErrMapIncompatible. With a target
// dispatcher it is loaded for one (loadFor).
func loadAgainst(p *Pinned, target *ebpf.Program) (*bpf.XdpObjects, error) {
	pinned := map[string]*ebpf.Map{}
	eachMap(&p.XdpMaps, func(name string, field **ebpf.Map) error {
		if *field != nil { // a map this version adds is made afresh
			pinned[name] = *field
		}
		return nil
	})
	var dialogs uint32 // pins of a version before the dialog table have none
	if p.Dialogs != nil {
		dialogs = maps.Dialogs(p.Dialogs)
	}
	var denied uint32 // nor those of a version before access control
	if p.Denied != nil {
		denied = p.Denied.MaxEntries()
	}
	return loadFor(Tables{Sources: p.Sources.MaxEntries(), Dialogs: dialogs, Denied: denied}, pinned, target)
}

// upgradePins pins the maps named in missing, as objs made them, in dir.
func upgradePins(dir string, objs *bpf.XdpObjects, missing []string) error {
	want := map[string]bool{}
	for _, name := range missing {
		want[name] = true
	}
	return eachMap(&objs.XdpMaps, func(name string, field **ebpf.Map) error {
		if !want[name] {
			return nil
		}
		if err := unpinReshaped(dir, name); err != nil {
			return err
		}
		if err := pinFresh(*field, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("pin %s, a map this version adds: %w", name, err)
		}
		return nil
	})
}

// unpinReshaped removes the pin in dir of a map of reshapedMaps, so that
// the one made afresh can be pinned there.
func unpinReshaped(dir, name string) error {
	if !reshapedMaps[name] {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the pin of %s, a map this version reshaped: %w", name, err)
	}
	return nil
}

// markRecent marks every Call-ID recent in the table this version adds
// (maps.MarkAllRecent), at the clock the program reads: the kernel's
// coarse monotonic one.
func markRecent(m *ebpf.Map) error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		return fmt.Errorf("read the clock for the recent Call-ID table: %w", err)
	}
	return maps.MarkAllRecent(m, uint64(ts.Nano()))
}
