package collector

import (
	"maps"
	"slices"
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
	// Jobs: each job of the daemon the configuration in force runs, true
	// while it does all its work, false while it has failed or is
	// degraded (status names the error).
	Jobs map[string]bool
	// RejectsLogFailures counts the writes, opens and rotations of the
	// rejects log that failed; RejectsLogLost the records it will never
	// hold (its memory bound ran out while it failed).
	RejectsLogFailures, RejectsLogLost uint64
}

// daemonFamilies are the metrics of DaemonState.
type daemonFamilies struct {
	attached, reloadOK, reloadAt family
	jobUp, logFailures, logLost  family
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
		jobUp: newFamily("xdpcac_job_up",
			"1 while a job of the daemon the configuration in force runs does all its work, 0 while it has failed or is degraded; cacctl status gives the error.",
			prometheus.GaugeValue, "job"),
		logFailures: newFamily("xdpcac_rejects_log_failures_total",
			"Writes, opens and rotations of the rejects log that failed; each is tried again after a backoff.",
			prometheus.CounterValue),
		logLost: newFamily("xdpcac_rejects_log_lost_total",
			"Reject records the rejects log will never hold: more than the daemon keeps in memory came while the log failed.",
			prometheus.CounterValue),
	}
}

func (f daemonFamilies) all() []family {
	return []family{f.attached, f.reloadOK, f.reloadAt, f.jobUp, f.logFailures, f.logLost}
}

// collect exports s; nothing without a daemon.
func (f daemonFamilies) collect(e *emitter, s *DaemonState) {
	if s == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(s.Configured)) {
		e.emit(f.attached, boolValue(s.Configured[name]), name)
	}
	e.emit(f.reloadOK, boolValue(s.ReloadOK))
	if !s.LoadedAt.IsZero() {
		e.emit(f.reloadAt, float64(s.LoadedAt.UnixNano())/1e9)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Jobs)) {
		e.emit(f.jobUp, boolValue(s.Jobs[name]), name)
	}
	e.emit(f.logFailures, float64(s.RejectsLogFailures))
	e.emit(f.logLost, float64(s.RejectsLogLost))
}
