package api

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// The deny table's paths (docs/design.md, "Auto-deny").
const (
	PathDenied      = "/v1/denied"       // GET: []DeniedSource
	PathDeniedClear = "/v1/denied/clear" // POST ClearDeniedRequest: []DeniedSource, those released
)

// How a source is denied: only the deny table's sources are listed, and
// the fast path fills it itself; the static lists are the configuration's.
const (
	DeniedAuto   = "auto"
	DeniedStatic = "static"
)

// Events of the records of the deny table in the rejects log (RejectLine.Event).
const (
	EventDenied   = "denied"
	EventReleased = "released"
)

// Why a source was released (RejectLine.Why).
const (
	ReleasedExpired     = "expired"       // its deny-for is over
	ReleasedCleared     = "cleared"       // cacctl clear denied
	ReleasedAutoDenyOff = "auto-deny off" // a configuration without auto-deny is in force
	ReleasedEvicted     = "evicted"       // the full deny table took it out, least recently used first
)

// DeniedSource is a source of the deny table as `cacctl show denied`
// lists it.
type DeniedSource struct {
	// Source is an IPv4 address, an IPv6 prefix (the classes'
	// ipv6-prefix; an address at /128) or a MAC.
	Source string `json:"source"`
	// How is DeniedAuto: the table holds only the sources the fast path
	// denied.
	How   string    `json:"how"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Refusals are those within the window that earned the denial;
	// Frames those dropped since.
	Refusals uint32 `json:"refusals"`
	Frames   uint64 `json:"frames"`
}

// ClearDeniedRequest names what to release: an address, a prefix (every
// source inside it), a MAC, or "all".
type ClearDeniedRequest struct {
	Target string `json:"target"`
}

// DenyTarget is what clear denied releases.
type DenyTarget struct {
	all    bool
	prefix netip.Prefix
	mac    net.HardwareAddr
}

// ParseDenyTarget reads ADDR, PREFIX, MAC or all.
func ParseDenyTarget(s string) (DenyTarget, error) {
	if s == "all" {
		return DenyTarget{all: true}, nil
	}
	if mac, err := net.ParseMAC(s); err == nil && len(mac) == 6 {
		return DenyTarget{mac: mac}, nil
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return DenyTarget{prefix: unmapPrefix(p).Masked()}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return DenyTarget{prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	return DenyTarget{}, fmt.Errorf(`want an address (203.0.113.7), a prefix (203.0.113.0/24, 2001:db8::/48), a MAC (02:00:5e:10:00:01) or "all", got %q`, s)
}

// unmapPrefix is p with an IPv4-mapped IPv6 address as IPv4.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// Matches reports whether t releases a source named as DeniedSource names
// it: all; a MAC itself; an address or prefix that overlaps the source's
// (an address inside an IPv6 source's prefix, a source inside a prefix).
func (t DenyTarget) Matches(source string) bool {
	if t.all {
		return true
	}
	if t.mac != nil {
		return strings.EqualFold(source, t.mac.String())
	}
	p, err := netip.ParsePrefix(source)
	if err != nil {
		a, aerr := netip.ParseAddr(source)
		if aerr != nil {
			return false // a MAC
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return t.prefix.IsValid() && t.prefix.Overlaps(unmapPrefix(p))
}
