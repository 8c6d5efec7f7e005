package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/bucket"
)

// WriteLimits writes the limit of every bucket level (by index; levels not
// given are unlimited) as one map value. That value is larger than a word,
// so it is written before the program is attached; changing limits under
// traffic (apply) needs a scheme that is never seen torn.
func WriteLimits(m *ebpf.Map, limits []bucket.Limit) error {
	var v bpf.XdpCacLimits
	if len(limits) > len(v.Level) {
		return fmt.Errorf("%d limits for %d levels", len(limits), len(v.Level))
	}
	for i, l := range limits {
		v.Level[i].IntervalNs, v.Level[i].ToleranceNs = l.IntervalNS, l.ToleranceNS
	}
	if err := m.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("write limits map: %w", err)
	}
	return nil
}

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
