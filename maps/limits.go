package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/bucket"
)

// WriteLimits writes the limit of each bucket level, by index. A limit is
// two words, so it is written before the program is attached; changing
// limits under traffic (apply) needs a scheme that is never seen torn.
func WriteLimits(m *ebpf.Map, limits []bucket.Limit) error {
	for i, l := range limits {
		v := bpf.XdpCacLimit{IntervalNs: l.IntervalNS, ToleranceNs: l.ToleranceNS}
		if err := m.Update(uint32(i), &v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write limit %d: %w", i, err)
		}
	}
	return nil
}

// ReadBucket returns the theoretical arrival time of a bucket level.
func ReadBucket(m *ebpf.Map, level int) (bucket.Bucket, error) {
	var v bpf.XdpCacBucket
	if err := m.Lookup(uint32(level), &v); err != nil {
		return bucket.Bucket{}, fmt.Errorf("read bucket %d: %w", level, err)
	}
	return bucket.Bucket{TATNS: v.TatNs}, nil
}
