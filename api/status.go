package api

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
	Current    bool   `json:"current"`
	// Egress is how the egress program that learns the dialogs the SIP
	// server opens is attached: tcx, clsact, none (attached by a version
	// before it) or missing (cacctl run attaches it again).
	Egress string `json:"egress"`
}

// DegradedBy says what keeps the filter from protecting as configured:
// nothing attached, a stale control plane, an interface without its
// egress program, pins the daemon could not make again, a filter a
// stopped attach left on an interface.
func (v StatusReport) DegradedBy() []string {
	why := []string{}
	if len(v.Interfaces) == 0 {
		why = append(why, "attached to no interface")
	}
	if v.Stale {
		why = append(why, "control plane stale (on-stale "+v.OnStale+")")
	}
	for _, i := range v.Interfaces {
		if i.Egress == "missing" {
			why = append(why, "no egress program on "+i.Interface)
		}
	}
	if v.Daemon != nil {
		for _, p := range v.Daemon.PinsLost {
			why = append(why, "pins of "+p+" lost")
		}
	}
	for _, o := range v.Orphans {
		if o.Filter {
			why = append(why, "a stopped attach left the filter on "+o.Interface)
		}
	}
	return why
}
