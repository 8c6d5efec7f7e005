package collector

import (
	"errors"
	"fmt"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// ReadPinned reads what a metrics scrape exports from the pinned maps of
// stateDir at monotonic time now: counters per attachment, and the shared
// buckets and call admission once. The loader opens the maps and knows
// nothing of a scrape, so the dependency runs from here to it, never back.
func ReadPinned(stateDir string, now uint64) (Snapshot, error) {
	return ReadPinnedNamed(stateDir, now, nil)
}

// ReadPinnedNamed is ReadPinned with the account and customer buckets,
// named by names; with names nil it leaves them out, as ReadPinned does.
func ReadPinnedNamed(stateDir string, now uint64, names Names) (Snapshot, error) {
	return ReadPinsNamed(loader.Fresh(stateDir), now, names)
}

// ReadPinsNamed is ReadPinnedNamed from pins, which a reader that scrapes
// again and again holds open between reads (loader.PinCache): a scrape
// opens no map of an attachment that did not change.
func ReadPinsNamed(pins loader.Pins, now uint64, names Names) (Snapshot, error) {
	snap := Snapshot{Interfaces: map[string]maps.Stats{}}
	st, err := loader.ReadCallAdmissionOf(pins)
	if err != nil {
		return snap, err
	}
	var ifaces []string
	for _, a := range st.Attachments {
		ifaces = append(ifaces, a.Key())
	}
	if len(st.Attachments) == 0 {
		return snap, nil
	}
	v := maps.CallAdmissionViewOf(st.CallAdmission, st.Inputs, st.Rings, st.Stats, now, ifaces)
	snap.CallAdmission = &v
	first := true
	var accountsErr error
	err = pins.Each(func(p *loader.Pinned) error {
		// The map as it counts, never since clear counters: a Prometheus
		// counter must not go back (docs/design.md, "Clearing counters").
		s, err := maps.ReadStats(p.Stats)
		if err != nil {
			return err
		}
		snap.Interfaces[p.Key()] = s
		if !first {
			return nil
		}
		first = false
		if p.Denied != nil { // one for the box, as the buckets
			denied, err := maps.ReadDenied(p.Denied, nil, 0) // a count of sources: no frames
			if err != nil {
				return err
			}
			snap.DenyTable = &DenyTable{Sources: maps.DeniedLive(denied, now), Size: uint64(p.Denied.MaxEntries())}
		}
		var set bpf.XdpCacSettings
		if err := p.Settings.Lookup(uint32(0), &set); err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		snap.MalformedDrop = set.MalformedDrop != 0
		levels, err := maps.ReadLevelTokens(maps.PolicyMapsOf(&p.XdpMaps), p.Buckets, now)
		for _, l := range levels {
			b := Bucket{Level: LevelEnvironment, Tokens: l.Tokens, Burst: l.Burst}
			if l.Level != policy.LevelEnvironment {
				b.Level, b.Class = LevelClass, cac.Class(l.Level).String()
			}
			snap.Buckets = append(snap.Buckets, b)
		}
		if err != nil || names == nil {
			return err
		}
		// Kept aside rather than returned: an error here would end the
		// walk and lose every other interface's counters.
		tokens, err := maps.ReadAccountTokens(maps.PolicyMapsOf(&p.XdpMaps), now)
		accounts, customers, nerr := nameBuckets(tokens, names)
		snap.Accounts, snap.Customers = accounts, customers
		accountsErr = errors.Join(err, nerr)
		return nil
	})
	return snap, errors.Join(err, accountsErr)
}
