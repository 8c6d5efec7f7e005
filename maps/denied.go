package maps

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
)

// Denied is a source of the deny table, which the fast path fills with the
// sources it auto-denies (docs/design.md, "Auto-deny").
type Denied struct {
	Key bpf.XdpCacDenyKey
	// Source names it: an IPv4 address, an IPv6 prefix of the settings'
	// ipv6_prefix, or a MAC.
	Source string
	// SinceNS and UntilNS are the fast path's monotonic clock: when it
	// was denied, and when it is let through again.
	SinceNS, UntilNS uint64
	// Frames counts the frames dropped since; Refusals the refusals
	// within the window that earned the denial.
	Frames   uint64
	Refusals uint32
}

// DenySource names a key of the deny table (bpf/access.h, deny_key_of):
// family 4 an IPv4 address, 6 an IPv6 address cut to ipv6Prefix bits
// (shown as a prefix unless that is 128), 0 a MAC.
func DenySource(k bpf.XdpCacDenyKey, ipv6Prefix uint8) string {
	switch k.Family {
	case 4:
		return netip.AddrFrom4([4]byte(k.Addr[:4])).String()
	case 6:
		a := netip.AddrFrom16(k.Addr)
		if ipv6Prefix == 0 || ipv6Prefix >= 128 {
			return a.String()
		}
		return netip.PrefixFrom(a, int(ipv6Prefix)).String()
	}
	return net.HardwareAddr(k.Addr[:6]).String()
}

// ReadAccessSettings reads the fast path's access settings
// (access_settings): the auto-deny window's slot, deny-for, the refusals
// that deny, and the IPv6 prefix sources are keyed by.
func ReadAccessSettings(m *ebpf.Map) (bpf.XdpCacAccessSettings, error) {
	var s bpf.XdpCacAccessSettings
	if err := m.Lookup(uint32(0), &s); err != nil {
		return s, fmt.Errorf("read the access settings: %w", err)
	}
	return s, nil
}

// AutoDenyOn reports whether the policy word in force (policy_slot) has
// auto-deny on: without it the fast path neither denies nor looks at the
// deny table.
func AutoDenyOn(slot *ebpf.Map) (bool, error) {
	var word uint32
	if err := slot.Lookup(uint32(0), &word); err != nil {
		return false, fmt.Errorf("read policy slot: %w", err)
	}
	return word&uint32(bpf.XdpCacPolicyPOLICY_AUTO_DENY) != 0, nil
}

// ReadDenied reads every source of the deny table, in batches as the
// reject records are read, named with ipv6Prefix (ReadAccessSettings).
// A source's frames are its entry's and those each CPU holds for it in
// pending (deny_pending, bpf/access.h), which may be nil for none.
func ReadDenied(m, pending *ebpf.Map, ipv6Prefix uint8) ([]Denied, error) {
	keys, vals, err := readRecords[bpf.XdpCacDenyKey, bpf.XdpCacDenied](m)
	if err != nil {
		return nil, fmt.Errorf("read the deny table: %w", err)
	}
	out := make([]Denied, len(keys))
	at := make(map[bpf.XdpCacDenyKey]int, len(keys))
	for i, k := range keys {
		v := vals[i]
		out[i] = Denied{Key: k, Source: DenySource(k, ipv6Prefix), SinceNS: v.SinceNs, UntilNS: v.UntilNs,
			Frames: v.Frames, Refusals: v.Refusals}
		at[k] = i
	}
	perCPU, err := readPending(pending)
	if err != nil {
		return nil, err
	}
	for _, p := range perCPU {
		// A count of an earlier denial of the source is not this one's.
		if i, ok := at[p.Key]; ok && p.Frames > 0 && out[i].SinceNS == p.SinceNs {
			out[i].Frames += p.Frames
		}
	}
	return out, nil
}

// PendingFrames is what the CPUs hold in pending (deny_pending) of the
// frames of source k denied since since, not yet in its entry's.
func PendingFrames(pending *ebpf.Map, k bpf.XdpCacDenyKey, since uint64) (uint64, error) {
	perCPU, err := readPending(pending)
	var n uint64
	for _, p := range perCPU {
		if p.Key == k && p.SinceNs == since {
			n += p.Frames
		}
	}
	return n, err
}

// readPending reads each CPU's count of deny_pending; none for a nil map.
func readPending(pending *ebpf.Map) ([]bpf.XdpCacDenyPending, error) {
	if pending == nil {
		return nil, nil
	}
	var perCPU []bpf.XdpCacDenyPending
	if err := pending.Lookup(uint32(0), &perCPU); err != nil {
		return nil, fmt.Errorf("read the frames pending of the deny table: %w", err)
	}
	return perCPU, nil
}

// DeleteDenied takes sources out of the deny table; one already gone (the
// table evicted it) is no error.
func DeleteDenied(m *ebpf.Map, keys []bpf.XdpCacDenyKey) error {
	if err := deleteRecords(m, keys); err != nil {
		return fmt.Errorf("delete from the deny table: %w", err)
	}
	return nil
}

// DeniedLive counts the sources of denied whose until has not passed at
// now, the fast path's monotonic clock: those it drops. A source whose
// deny-for ended stays in the table until the daemon releases it.
func DeniedLive(denied []Denied, now uint64) uint64 {
	var n uint64
	for _, d := range denied {
		if d.UntilNS > now {
			n++
		}
	}
	return n
}
