package api

import (
	"fmt"
	"net"
	"strconv"
)

// StatusReport is `cacctl status -o json`: the daemon, as it says of
// itself, and what the pins say of every attachment.
type StatusReport struct {
	Version  string `json:"version"`
	StateDir string `json:"state_dir"`
	// Daemon is null when no cacctl run serves this state directory.
	Daemon         *Status           `json:"daemon"`
	HeartbeatAgeMS *int64            `json:"heartbeat_age_ms"`
	Stale          bool              `json:"stale"`
	OnStale        string            `json:"on_stale"`
	Interfaces     []InterfaceStatus `json:"interfaces"`
	// Orphans are directories attaches that were killed left behind.
	Orphans []Orphan `json:"orphans"`
	// Degraded says why the filter does not protect as configured; empty
	// when it does. status exits 3 when it is not.
	Degraded []string `json:"degraded"`
	// Missing are the interfaces the daemon's file in force names that
	// have no attachment; [] for none, or without a daemon.
	Missing []MissingInterface `json:"missing_interfaces"`
	// UnwatchedListeners are the SIP listeners of the network namespaces
	// the filter acts in that it does not watch (docs/design.md, "SIP
	// listeners"): a warning, which degrades nothing; [] for none.
	UnwatchedListeners []UnwatchedListener `json:"unwatched_listeners"`
}

// UnwatchedListener is a socket that takes SIP where the filter does not
// look: UDP on a SIP port missing from ports.sip, or TCP or SCTP on any
// SIP port.
type UnwatchedListener struct {
	Transport string `json:"transport"` // udp, tcp or sctp
	// Address is the local address it is bound to: 0.0.0.0 or :: for
	// every address.
	Address string `json:"address"`
	Port    uint16 `json:"port"`
	Netns   string `json:"netns"`   // its network namespace; "" cacctl's
	Process string `json:"process"` // its owner's command name; "" when not found
	PID     int    `json:"pid"`     // its owner; 0 when not found
	// Reason says why the filter does not watch it.
	Reason string `json:"reason"`
}

// String names the listener as the warnings do: tcp [::]:5060 in
// network namespace NS (kamailio, pid 1234).
func (u UnwatchedListener) String() string {
	s := u.Transport + " " + net.JoinHostPort(u.Address, strconv.Itoa(int(u.Port)))
	if u.Netns != "" {
		s += " in network namespace " + u.Netns
	}
	if u.PID != 0 {
		s += fmt.Sprintf(" (%s, pid %d)", u.Process, u.PID)
	}
	return s
}

// Orphan is one directory of an attach killed before it finished.
type Orphan struct {
	Interface string `json:"interface"` // "" when its name does not say
	Dir       string `json:"dir"`
	// Filter says it holds the XDP link: the filter is on the interface
	// until a detach or an attach of it removes it.
	Filter bool   `json:"filter_on"`
	Iface  string `json:"-"` // what detach takes
}

// InterfaceStatus is one attachment.
type InterfaceStatus struct {
	Interface string `json:"interface"`
	Mode      string `json:"mode"`
	// Priority is the run priority in the libxdp dispatcher, in mode
	// multi only (0 otherwise).
	Priority   uint32 `json:"priority"`
	Link       string `json:"link"`
	ProgramTag string `json:"program_tag"`
	// ProgramID is the kernel's ID of the running program, as bpftool
	// and xdp-loader name it.
	ProgramID uint32 `json:"program_id"`
	Current   bool   `json:"current"`
	// Egress is how the egress program that learns the dialogs the SIP
	// server opens is attached: tcx, clsact, none (attached by a version
	// before it) or missing (cacctl run attaches it again).
	Egress string `json:"egress"`
}

// DegradedBy says what keeps the filter from protecting as configured:
// nothing attached, an interface the daemon's file names that is missing,
// an attached one gone, a stale control plane, an interface without its
// egress program, pins the daemon could not make again, a job of the
// daemon failed or degraded, a filter a stopped attach left on an
// interface.
func (v StatusReport) DegradedBy() []string {
	why := []string{}
	if len(v.Interfaces) == 0 {
		why = append(why, "attached to no interface")
	}
	for _, m := range v.Missing {
		if m.Present {
			why = append(why, "interface "+m.Interface+" not attached: the file in force names it, but it was detached; cacctl apply attaches it again")
			continue
		}
		why = append(why, "interface "+m.Interface+" missing: the file in force names it; the filter goes on it when it appears")
	}
	if v.Stale {
		why = append(why, "control plane stale (on-stale "+v.OnStale+")")
	}
	for _, i := range v.Interfaces {
		switch {
		case i.Link == "defunct":
			why = append(why, "interface "+i.Interface+" gone: the filter returns with it")
		case i.Egress == "missing":
			why = append(why, "no egress program on "+i.Interface)
		}
	}
	if v.Daemon != nil {
		for _, p := range v.Daemon.PinsLost {
			why = append(why, "pins of "+p+" lost")
		}
		for _, j := range v.Daemon.Jobs {
			if j.Broken() {
				why = append(why, "job "+j.Name+" "+j.State+": "+j.Error)
			}
		}
	}
	for _, o := range v.Orphans {
		if o.Filter {
			why = append(why, "a stopped attach left the filter on "+o.Interface)
		}
	}
	return why
}

// Unattached are the interfaces the daemon's file in force names that
// have no attachment; none without a daemon.
func (v StatusReport) Unattached() []string {
	if v.Daemon == nil {
		return nil
	}
	attached := map[string]bool{}
	for _, i := range v.Interfaces {
		attached[i.Interface] = true
	}
	var out []string
	for _, name := range v.Daemon.Interfaces {
		if !attached[name] {
			out = append(out, name)
		}
	}
	return out
}

// MissingInterface is an interface the daemon's file in force names
// that has no attachment.
type MissingInterface struct {
	Interface string `json:"interface"`
	// Present says the interface exists: it was detached by hand, not
	// deleted or never made.
	Present bool `json:"present"`
}
