package maps

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/admission"
	"github.com/xdpcac/xdpcac/cac/bucket"
)

// PolicyMaps are the maps that hold the limits of every level.
type PolicyMaps struct {
	Limits         *ebpf.Map // class, environment and per-source limits
	Accounts       *ebpf.Map // LPM trie: source prefix → account, customer
	AccountLimits  *ebpf.Map
	CustomerLimits *ebpf.Map
}

// PolicyMapsOf picks the policy maps out of loaded objects.
func PolicyMapsOf(o *bpf.XdpObjects) PolicyMaps {
	return PolicyMaps{Limits: o.Limits, Accounts: o.Accounts, AccountLimits: o.AccountLimits, CustomerLimits: o.CustomerLimits}
}

func limitOf(l bucket.Limit) bpf.XdpCacLimit {
	return bpf.XdpCacLimit{IntervalNs: l.IntervalNS, ToleranceNs: l.ToleranceNS}
}

// WritePolicy writes every limit. The limits value is larger than a word,
// so it is written before the program is attached; changing limits under
// traffic (apply) needs a scheme that is never seen torn.
func WritePolicy(pm PolicyMaps, p admission.Policy) error {
	var v bpf.XdpCacLimits
	for i, l := range p.Levels {
		v.Level[i] = limitOf(l)
	}
	for c, ps := range p.PerSource {
		v.Classes[c].PerSource = limitOf(ps.Limit)
		v.Classes[c].SourceKey = uint8(ps.Key)
		v.Classes[c].Ipv6Prefix = uint8(ps.IPv6Prefix)
	}
	v.Accounts = uint32(len(p.Accounts))
	for i, a := range p.Accounts {
		m := admission.Mapped(a.Prefix)
		key := bpf.XdpCacPrefix{Prefixlen: uint32(m.Bits()), Addr: m.Addr().As16()}
		val := bpf.XdpCacAccount{Account: uint32(i), Customer: uint32(a.Customer)}
		if err := pm.Accounts.Update(&key, &val, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write account %s: %w", a.Prefix, err)
		}
		if err := pm.AccountLimits.Update(uint32(i), limitOf(a.Limit), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write limit of account %s: %w", a.Prefix, err)
		}
	}
	for i, l := range p.Customers {
		if err := pm.CustomerLimits.Update(uint32(i), limitOf(l), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write limit of customer %d: %w", i, err)
		}
	}
	if err := pm.Limits.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
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
