package access

import (
	"net/netip"
)

// Verdict is what access control says of a source: enum cac_access.
type Verdict uint8

const (
	None  Verdict = 0 // CAC_ACCESS_NONE: not denied
	Deny  Verdict = 1 // CAC_ACCESS_DENY: a static list's deny
	Auto  Verdict = 2 // CAC_ACCESS_AUTO: the deny table's
	Allow Verdict = 3 // CAC_ACCESS_ALLOW: a list entry only
)

// Slots is CAC_DENY_SLOTS: the window's eighths.
const Slots = 8

// Lists are the static lists: IP prefixes (IPv4 mapped into IPv6) and
// MACs of PPPoE sources, each Deny or Allow.
type Lists struct {
	Prefixes map[netip.Prefix]Verdict
	MACs     map[[6]byte]Verdict
}

// Of is what the lists say of an IP source (family 4 or 6, IPv4 mapped),
// the longest prefix that holds it, or of a MAC (family 0), as list_of
// does.
func (l *Lists) Of(s Source) Verdict {
	if s.Family == 0 {
		return l.MACs[s.MAC]
	}
	for bits := 128; bits >= 0; bits-- {
		p, err := s.Mapped().Prefix(bits)
		if err != nil {
			continue
		}
		if v, ok := l.Prefixes[p]; ok {
			return v
		}
	}
	return None
}

// Empty reports whether the lists hold nothing: POLICY_ACCESS_LISTS clear.
func (l *Lists) Empty() bool { return len(l.Prefixes) == 0 && len(l.MACs) == 0 }

// Source is a frame's source as access control reads it: an IP address
// (family 4 or 6) or, for a frame with no IP header, a MAC (family 0).
type Source struct {
	Family uint8
	Addr   netip.Addr // IPv4 or IPv6, unmapped
	MAC    [6]byte
}

// Mapped is s's address with IPv4 mapped into IPv6, as prefix_of keys the
// access_list trie.
func (s Source) Mapped() netip.Addr {
	if s.Addr.Is4() {
		return netip.AddrFrom16(s.Addr.As16())
	}
	return s.Addr
}

// Settings are the auto-deny settings, struct cac_access_settings:
// SlotNS 0 (or Refused 0) turns auto-deny off.
type Settings struct {
	SlotNS, DenyForNS uint64
	Refused           uint32
	IPv6Prefix        uint8
}

// Key is the deny table's key, struct cac_deny_key: family 0/4/6 and an
// address of 16 bytes, IPv4 in the first 4, IPv6 cut to the settings'
// prefix, a MAC in the first 6.
type Key struct {
	Family uint8
	Addr   [16]byte
}

// KeyOf is deny_key_of: s's key under settings.
func (st Settings) KeyOf(s Source) Key {
	k := Key{Family: s.Family}
	switch s.Family {
	case 4:
		a := s.Addr.As4()
		copy(k.Addr[:], a[:])
	case 6:
		bits := int(st.IPv6Prefix)
		a := s.Addr
		if bits < 128 {
			p, _ := s.Addr.Prefix(bits)
			a = p.Addr()
		}
		k.Addr = a.As16()
	default:
		copy(k.Addr[:], s.MAC[:])
	}
	return k
}
