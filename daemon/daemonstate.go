package daemon

import (
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// daemonState is what the metrics export of the daemon itself
// (docs/metrics.md, "The daemon's own"): for every interface the file in
// force names, whether the filter is on it, asked of the pins and the
// kernel afresh (a few netlink requests, no program loaded), so that an
// alert fires for one interface of many, not only when none is attached;
// and whether the last reload put its file in force.
func (d *Daemon) daemonState() *collector.DaemonState {
	d.mu.Lock()
	names := append([]string(nil), d.status.Interfaces...)
	s := &collector.DaemonState{ReloadOK: !d.reloadRefused, LoadedAt: d.status.LoadedAt}
	d.mu.Unlock()
	s.Configured = make(map[string]bool, len(names))
	for _, key := range names {
		s.Configured[key] = !loader.NeedsAttach(d.cfg.StateDir, loader.AttachmentOfKey(key, d.cfg.Netns))
	}
	s.Jobs = map[string]bool{}
	for _, j := range d.jobs() {
		if j.State != api.JobOff {
			s.Jobs[j.Name] = !j.Broken()
		}
	}
	if d.journal != nil {
		h := d.journal.file.health()
		s.RejectsLogFailures, s.RejectsLogLost = h.Failures, h.Lost
	}
	return s
}
