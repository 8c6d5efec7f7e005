package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/bucket"
)

// ReadBucket returns the state of one bucket level.
func ReadBucket(m *ebpf.Map, level int) (bucket.Bucket, error) {
	var v bpf.XdpCacBuckets
	if err := m.Lookup(uint32(0), &v); err != nil {
		return bucket.Bucket{}, fmt.Errorf("read buckets map: %w", err)
	}
	if level < 0 || level >= len(v.Level) {
		return bucket.Bucket{}, fmt.Errorf("no bucket level %d", level)
	}
	return bucket.Bucket{TATNS: v.Level[level].TatNs}, nil
}

// LevelTokens is how many calls a class or environment bucket holds.
type LevelTokens struct {
	Level  int // a class, or policy.LevelEnvironment
	Tokens float64
	Burst  float64
}

// ReadLevelTokens reads the class and environment buckets at monotonic
// time now against the limits in force; unlimited levels are left out.
func ReadLevelTokens(pm PolicyMaps, buckets *ebpf.Map, now uint64) ([]LevelTokens, error) {
	lim, err := readLimits(pm)
	if err != nil {
		return nil, err
	}
	var bk bpf.XdpCacBuckets
	if err := buckets.Lookup(uint32(0), &bk); err != nil {
		return nil, fmt.Errorf("read buckets: %w", err)
	}
	var out []LevelTokens
	for i, l := range lim.Level {
		if l.IntervalNs == 0 {
			continue
		}
		b := bucket.Limit{IntervalNS: l.IntervalNs, ToleranceNS: l.ToleranceNs}
		tokens, burst := bucket.Bucket{TATNS: bk.Level[i].TatNs}.Tokens(b, now)
		out = append(out, LevelTokens{Level: i, Tokens: tokens, Burst: burst})
	}
	return out, nil
}

// readLimits reads the limits of the slot in force.
func readLimits(pm PolicyMaps) (bpf.XdpCacLimits, error) {
	var slot uint32
	var v bpf.XdpCacLimits
	if err := pm.Slot.Lookup(uint32(0), &slot); err != nil {
		return v, fmt.Errorf("read policy slot: %w", err)
	}
	if err := pm.Limits.Lookup(wordSlot(slot), &v); err != nil {
		return v, fmt.Errorf("read limits: %w", err)
	}
	return v, nil
}
