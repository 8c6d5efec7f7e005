package collector

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DaemonState is what only a running cacctl run knows of itself, for the
// metrics an operator alerts on when the filter is off an interface or a
// reload was refused (docs/metrics.md, "The daemon's own"). A Snapshot
// read from the pins alone has none.
type DaemonState struct {
	// Configured: every interface the configuration in force names, as
	// show stats keys it (IFACE or NETNS:IFACE), true while the filter is
	// on it; false while it is missing, gone, or a dispatcher lost it.
	Configured map[string]bool
	// ReloadOK: the last start or reload put its file in force; a refused
	// reload keeps the file before it, and ReloadOK false until the next
	// one succeeds. LoadedAt: when the file in force was put in force.
	ReloadOK bool
	LoadedAt time.Time
}

// daemonFamilies are the metrics of DaemonState.
type daemonFamilies struct {
	attached, reloadOK, reloadAt family
}

func newDaemonFamilies() daemonFamilies {
	return daemonFamilies{
		attached: newFamily("xdpcac_interface_attached",
			"1 while the filter is on an interface the configuration in force names, 0 while the interface is missing or gone.",
			prometheus.GaugeValue, "iface"),
		// Named as Prometheus and Alertmanager name their own.
		reloadOK: newFamily("xdpcac_config_last_reload_successful",
			"1 when the last start or reload of cacctl run put its file in force, 0 after a refused reload (the file before it stays in force).",
			prometheus.GaugeValue),
		reloadAt: newFamily("xdpcac_config_last_reload_success_timestamp_seconds",
			"When the file in force was put in force, in seconds since the epoch.",
			prometheus.GaugeValue),
	}
}

func (f daemonFamilies) all() []family { return []family{f.attached, f.reloadOK, f.reloadAt} }

// collect exports s; nothing without a daemon.
func (f daemonFamilies) collect(e *emitter, s *DaemonState) {
	if s == nil {
		return
	}
	names := make([]string, 0, len(s.Configured))
	for name := range s.Configured {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e.emit(f.attached, boolValue(s.Configured[name]), name)
	}
	e.emit(f.reloadOK, boolValue(s.ReloadOK))
	if !s.LoadedAt.IsZero() {
		e.emit(f.reloadAt, float64(s.LoadedAt.UnixNano())/1e9)
	}
}
