package config

import (
	"net"
	"net/netip"
	"time"

	"go.yaml.in/yaml/v3"
)

// Access is the access block (docs/design.md, "Access control"): static
// deny and allow lists of prefixes and MACs, and auto-deny.
type Access struct {
	Deny, Allow       []netip.Prefix
	DenyMAC, AllowMAC []net.HardwareAddr
	// AutoDeny is nil when auto-deny is off.
	AutoDeny *AutoDeny
}

// AutoDeny is access.auto-deny (docs/design.md, "Auto-deny").
type AutoDeny struct {
	Refused         uint32
	Within, DenyFor time.Duration
	Table           uint32
}

// Bounds of the access block: the fast path's list sizes (bpf/shared.h),
// and auto-deny's window, counted in eight slots of at least 10ms each.
const (
	MaxAccessPrefixes = 16384
	MaxAccessMACs     = 4096
	MinWithin         = 80 * time.Millisecond
	MaxWithin         = time.Hour
	MinDenyFor        = time.Second
	MaxDenyFor        = 7 * 24 * time.Hour
	DefaultDenyTable  = 65536
)

func (d *decoder) access(path string, n *yaml.Node, a *Access) {
	seen := map[netip.Prefix]string{}
	list := func(dst *[]netip.Prefix, name string) func(string, *yaml.Node) {
		return func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) {
				var pr netip.Prefix
				d.prefix(v, p, &pr)
				if !pr.IsValid() {
					return
				}
				m := pr
				if m.Addr().Is4() {
					m = netip.PrefixFrom(netip.AddrFrom16(m.Addr().As16()), m.Bits()+96)
				}
				if other, ok := seen[m]; ok && other != name {
					d.errorf(v, p, "%s is in both access.deny and access.allow", pr)
					return
				}
				seen[m] = name
				if len(a.Deny)+len(a.Allow) >= MaxAccessPrefixes {
					d.errorf(v, p, "more than %d prefixes in access.deny and access.allow: the fast path holds no more", MaxAccessPrefixes)
					return
				}
				*dst = append(*dst, pr)
			})
		}
	}
	macs := func(dst *[]net.HardwareAddr) func(string, *yaml.Node) {
		return func(p string, v *yaml.Node) {
			d.sequence(v, p, func(p string, v *yaml.Node) {
				s, ok := d.scalar(v, p)
				if !ok {
					return
				}
				hw, err := net.ParseMAC(s)
				if err != nil || len(hw) != 6 {
					d.errorf(v, p, "must be a MAC of 6 bytes such as 02:00:00:00:00:01, got %q", s)
					return
				}
				if len(a.DenyMAC)+len(a.AllowMAC) >= MaxAccessMACs {
					d.errorf(v, p, "more than %d MACs in access.deny-mac and access.allow-mac: the fast path holds no more", MaxAccessMACs)
					return
				}
				*dst = append(*dst, hw)
			})
		}
	}
	d.mapping(n, path, fields{
		"deny":      list(&a.Deny, "deny"),
		"allow":     list(&a.Allow, "allow"),
		"deny-mac":  macs(&a.DenyMAC),
		"allow-mac": macs(&a.AllowMAC),
		"auto-deny": func(p string, v *yaml.Node) { a.AutoDeny = d.autoDeny(p, v) },
	})
}

func (d *decoder) autoDeny(path string, n *yaml.Node) *AutoDeny {
	ad := &AutoDeny{Table: DefaultDenyTable}
	bounded := func(dst *time.Duration, lo, hi time.Duration) func(string, *yaml.Node) {
		return func(p string, v *yaml.Node) {
			d.duration(v, p, dst)
			if *dst != 0 && (*dst < lo || *dst > hi) {
				d.errorf(v, p, "must be from %v to %v, got %q", lo, hi, v.Value)
			}
		}
	}
	d.mapping(n, path, fields{
		"refused": func(p string, v *yaml.Node) {
			if x, ok := d.integer(v, p, 1, 1<<31); ok {
				ad.Refused = uint32(x)
			}
		},
		"within": func(p string, v *yaml.Node) {
			bounded(&ad.Within, MinWithin, MaxWithin)(p, v)
			if ad.Within%8 != 0 {
				d.errorf(v, p, "must be counted in 8 slots of whole nanoseconds, got %q", v.Value)
			}
		},
		"deny-for": bounded(&ad.DenyFor, MinDenyFor, MaxDenyFor),
		"table": func(p string, v *yaml.Node) {
			if x, ok := d.integer(v, p, 1024, 4194304); ok {
				ad.Table = uint32(x)
			}
		},
	})
	for key, missing := range map[string]bool{"refused": ad.Refused == 0, "within": ad.Within == 0, "deny-for": ad.DenyFor == 0} {
		if missing {
			d.errorf(n, join(path, key), "is required")
		}
	}
	return ad
}

// AutoDenyIPv6Prefix is the prefix an IPv6 source is cut to in the deny
// table: the per-source buckets' ipv6-prefix, 64 when none sets one, and
// the shortest where classes differ, so that a source that roams inside
// one class's prefix is still one source to auto-deny (docs/design.md,
// "Auto-deny").
func (c *Config) AutoDenyIPv6Prefix() int {
	bits := 0
	for _, cl := range c.Classes {
		if ps := cl.PerSource; ps != nil && !ps.Unlimited() && ps.Key == "ip" && (bits == 0 || ps.IPv6Prefix < bits) {
			bits = ps.IPv6Prefix
		}
	}
	if bits == 0 {
		return 64
	}
	return bits
}
