package daemon

import (
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
	return s
}
