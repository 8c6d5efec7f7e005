package sockbuf

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pressure is the outcome of one Check.
type Pressure struct {
	// Full is true when any watched socket is under pressure: the buffer
	// charge is at its maximum.
	Full bool
	// Sockets holds every watched socket found, under pressure or not, in
	// a stable order.
	Sockets []Socket
}

// Socket is one watched socket as one Check found it.
type Socket struct {
	Kind      string // "udp" or "packet"
	Port      uint16 // udp: local port
	Protocol  uint16 // packet: ethertype, host order
	Inode     uint32 // as in /proc/PID/fd, to find the daemon that owns it
	RmemAlloc uint32 // bytes in the receive queue (SK_MEMINFO_RMEM_ALLOC)
	Rcvbuf    uint32 // receive buffer limit in bytes (SK_MEMINFO_RCVBUF)
	Drops     uint32 // packets dropped on the socket (SK_MEMINFO_DROPS)
	DropsRose bool   // Drops differs from the previous Check
	Full      bool   // this socket is under pressure
}

// String is one line for an operator: the sockets under pressure, or "none".
func (p Pressure) String() string {
	var parts []string
	for _, s := range p.Sockets {
		if s.Full {
			parts = append(parts, s.String())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// String names the socket the way an operator looks for it (ss -uampn, ss
// -0mp) and says what is wrong with it.
func (s Socket) String() string {
	var b strings.Builder
	if s.Kind == "packet" {
		fmt.Fprintf(&b, "packet %#04x", s.Protocol)
	} else {
		fmt.Fprintf(&b, "%s %d", s.Kind, s.Port)
	}
	fmt.Fprintf(&b, " inode %d: ", s.Inode)
	if s.Rcvbuf > 0 {
		fmt.Fprintf(&b, "%d%% of %d bytes", uint64(s.RmemAlloc)*100/uint64(s.Rcvbuf), s.Rcvbuf)
	} else {
		fmt.Fprintf(&b, "%d bytes queued, no receive buffer", s.RmemAlloc)
	}
	if s.DropsRose {
		fmt.Fprintf(&b, ", drops rose to %d", s.Drops)
	}
	return b.String()
}

func sortSockets(s []Socket) {
	slices.SortFunc(s, func(a, b Socket) int {
		return cmp.Or(
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Port, b.Port),
			cmp.Compare(a.Protocol, b.Protocol),
			cmp.Compare(a.Inode, b.Inode),
		)
	})
}
