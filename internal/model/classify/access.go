package classify

import "github.com/xdpcac/xdpcac/cac"

// Judged is what access control reads of a frame (access_of and
// DENIED_RESULT of bpf/classify.h).
type Judged struct {
	// Watched: the frame's source is judged, right after the header
	// that names it: a PPPoE discovery frame, a datagram to a watched
	// port or a sip-connect, or an IP packet found malformed.
	Watched bool
	// Family is 4 or 6 for an IP source at L3, 0 for a MAC.
	Family uint8
	L3     int
	// Known is the class plus one the frame shows before its parse
	// (PADI, PADR, sip-connect), 0 for none.
	Known int
}

// Judge returns what access control reads of frame, its priority tags
// already stripped.
func Judge(frame []byte, ports *Ports) Judged {
	etherType, off := l2(frame)
	switch etherType {
	case etherTypePPPoEDsc:
		j := Judged{Watched: true, L3: off}
		if off+6 <= len(frame) {
			switch frame[off+1] {
			case 0x09:
				j.Known = int(cac.PPPoEPADI) + 1
			case 0x19:
				j.Known = int(cac.PPPoEPADR) + 1
			}
		}
		return j
	case etherTypeIPv4, etherTypeIPv6:
		j := Judged{Family: 4, L3: off}
		if etherType == etherTypeIPv6 {
			j.Family = 6
		}
		u := datagram(frame, etherType, off, ports.byDest, &ports.sipTCP)
		j.Watched = u.verdict == cac.Session || u.verdict == cac.Malformed
		if u.connect {
			j.Known = int(cac.SIPConnect) + 1
		}
		return j
	}
	// Too deep in tags: judged by MAC if refused, never before.
	return Judged{}
}
