package listeners

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
)

// Transport is the transport protocol of a listener, as the metrics and
// the JSON of cacctl status name it.
type Transport string

// The transports sock_diag is asked about.
const (
	UDP  Transport = "udp"
	TCP  Transport = "tcp"
	SCTP Transport = "sctp"
)

// Transports are every transport, in the order they are reported: the
// metrics have a series for each, 0 included.
func Transports() []Transport { return []Transport{UDP, TCP, SCTP} }

// Listener is one socket that takes what arrives on its local address:
// a bound, unconnected UDP socket, or a TCP or SCTP socket in LISTEN.
type Listener struct {
	Transport Transport
	// Local is the address and port it is bound to; the unspecified
	// address (0.0.0.0 or ::) for every address.
	Local netip.AddrPort
	// Inode is the socket's inode, which names it in /proc/PID/fd.
	Inode uint32
}

func (l Listener) String() string { return fmt.Sprintf("%s %s", l.Transport, l.Local) }

// wellKnownSIPPorts are the ports a SIP server listens on by default or
// by common practice, so that a listener on one is taken for SIP even
// when ports.sip does not name it: 5060 (RFC 3261, UDP and TCP), 5061
// (SIP over TLS), 5062–5069 (the next instances or interfaces of one
// box) and 5080–5081 (FreeSWITCH's external profile, plain and TLS).
// 80, 443, 8080, 8443 and 10443 carry SIP over WebSocket (RFC 7118) too,
// but as often a web server or an API: a socket's port cannot tell which,
// and naming every web server as an unwatched SIP listener would teach
// operators to ignore the warning, so they are left out. Never written.
var wellKnownSIPPorts = []uint16{5060, 5061, 5062, 5063, 5064, 5065, 5066, 5067, 5068, 5069, 5080, 5081}

// IsSIPPort reports whether a listener on port is taken for a SIP
// listener: port is in ports.sip or ports.sip-tcp (sipPorts) or is one
// of the well-known SIP ports.
func IsSIPPort(port uint16, sipPorts []uint16) bool {
	return slices.Contains(sipPorts, port) || slices.Contains(wellKnownSIPPorts, port)
}

// Finding is a SIP listener the filter does not watch, and why.
type Finding struct {
	Listener
	// Reason says why the filter does not watch it, in words for an
	// operator: its port is not in ports.sip, or its transport is not UDP.
	Reason string
}

// Watched are the ports the filter watches: SIP over UDP to UDP
// (ports.sip), and connections to TCP (ports.sip-tcp), whose SYNs are
// class sip-connect.
type Watched struct {
	UDP, TCP []uint16
}

// Unwatched are the SIP listeners among ls that the filter, watching the
// ports of w, does not watch:
//   - a UDP listener on a SIP port that is not in ports.sip;
//   - a TCP listener on a SIP port that is not in ports.sip-tcp: its
//     connections are admitted by no limit;
//   - an SCTP listener on any SIP port, since the fast path admits
//     neither its associations nor its messages.
//
// A listener bound to a loopback address is left out: nothing from the
// wire reaches it, so it is no way round the filter. Sockets that share
// an address and port (SO_REUSEPORT, or one per worker) are one finding,
// the first of them; the findings come in the order of Transports, then
// by port and address.
func Unwatched(ls []Listener, w Watched) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, l := range ls {
		port := l.Local.Port()
		if l.Local.Addr().IsLoopback() || !IsSIPPort(port, slices.Concat(w.UDP, w.TCP)) {
			continue
		}
		var why string
		switch l.Transport {
		case UDP:
			if slices.Contains(w.UDP, port) {
				continue // watched
			}
			why = fmt.Sprintf("port %d is not in ports.sip %v", port, portList(w.UDP))
		case TCP:
			if slices.Contains(w.TCP, port) {
				continue // its connections are sip-connect
			}
			why = fmt.Sprintf("port %d is not in ports.sip-tcp %v", port, portList(w.TCP))
		default:
			why = fmt.Sprintf("the filter admits SIP over UDP and TCP only, not over %s", l.Transport)
		}
		if key := l.String(); !seen[key] {
			seen[key] = true
			out = append(out, Finding{Listener: l, Reason: why})
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(slices.Index(Transports(), a.Transport), slices.Index(Transports(), b.Transport)),
			cmp.Compare(a.Local.Port(), b.Local.Port()),
			a.Local.Addr().Compare(b.Local.Addr()))
	})
	return out
}

// portList is ports sorted, for a message; [] for none.
func portList(ports []uint16) []uint16 {
	s := slices.Clone(ports)
	slices.Sort(s)
	if s == nil {
		s = []uint16{}
	}
	return s
}

// Count is how many findings there are of each transport, every
// transport present, for the metrics.
func Count(fs []Finding) map[Transport]int {
	n := map[Transport]int{}
	for _, t := range Transports() {
		n[t] = 0
	}
	for _, f := range fs {
		n[f.Transport]++
	}
	return n
}
