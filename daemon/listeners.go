package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/listeners"
	"github.com/xdpcac/xdpcac/loader"
)

// listenerRefresh is how often the daemon lists the SIP listeners again:
// a SIP server started after the daemon is named within seconds, and a
// scrape reads the last count instead of dumping sockets itself.
const listenerRefresh = 10 * time.Second

// UnwatchedListeners are the SIP listeners of the named network
// namespace ("" this one) that a filter watching the ports w (ports.sip
// over UDP, ports.sip-tcp's connections) does not watch, with their owners
// where /proc tells (docs/design.md, "SIP listeners").
func UnwatchedListeners(ns string, w listeners.Watched) ([]api.UnwatchedListener, error) {
	ls, err := listeners.List(ns)
	if err != nil {
		return []api.UnwatchedListener{}, err
	}
	return named(ns, listeners.Unwatched(ls, w)), nil
}

// WatchedPorts are the ports a filter put in force with cfg watches.
func WatchedPorts(cfg *config.Config) listeners.Watched {
	return listeners.Watched{UDP: slices.Clone(cfg.Ports.SIP), TCP: slices.Clone(cfg.Ports.SIPTCP)}
}

// StatusListeners are the unwatched SIP listeners of every network
// namespace the filters of stateDir act in, against the SIP ports their
// port table holds: what is in force, whatever the file says now. [] with
// nothing attached; what could be listed when a namespace cannot be.
func StatusListeners(stateDir string) ([]api.UnwatchedListener, error) {
	out := []api.UnwatchedListener{}
	atts, err := loader.List(stateDir)
	if err != nil || len(atts) == 0 {
		return out, err
	}
	udp, tcp, err := loader.SIPPorts(stateDir)
	if err != nil {
		return out, err
	}
	var errs []error
	done := map[string]bool{}
	for _, a := range atts {
		if done[a.Netns] {
			continue
		}
		done[a.Netns] = true
		u, err := UnwatchedListeners(a.Netns, listeners.Watched{UDP: udp, TCP: tcp})
		errs = append(errs, err)
		out = append(out, u...)
	}
	return out, errors.Join(errs...)
}

// named turns findings into the API's listeners, with the owner of each
// socket where one is found.
func named(ns string, fs []listeners.Finding) []api.UnwatchedListener {
	inodes := make([]uint32, 0, len(fs))
	for _, f := range fs {
		inodes = append(inodes, f.Inode)
	}
	owners := listeners.Owners("/proc", inodes)
	out := make([]api.UnwatchedListener, 0, len(fs))
	for _, f := range fs {
		o := owners[f.Inode]
		out = append(out, api.UnwatchedListener{
			Transport: string(f.Transport), Address: f.Local.Addr().String(), Port: f.Local.Port(),
			Netns: ns, Process: o.Process, PID: o.PID, Reason: f.Reason,
		})
	}
	return out
}

// listenerWatch is the daemon's view of the unwatched SIP listeners of
// its namespace: it logs every one when a configuration is put in force
// and each new one as it appears, and keeps their count per transport
// for the metrics.
type listenerWatch struct {
	ns  string
	log *slog.Logger

	// refreshing lets one refresh run at a time, so that what it logs as
	// new is new; it guards known.
	refreshing sync.Mutex
	known      map[string]bool // the listeners the last refresh found

	mu      sync.Mutex
	ports   listeners.Watched           // ports.sip and ports.sip-tcp in force
	counts  map[listeners.Transport]int // nil until a refresh succeeds
	lastErr string                      // of the last refresh, "" when it succeeded
}

func newListenerWatch(ns string, log *slog.Logger) *listenerWatch {
	return &listenerWatch{ns: ns, log: log}
}

// configure puts the SIP ports of a configuration in force and logs every
// SIP listener it leaves unwatched. The ports are set before it returns,
// so that of two reloads the last one's stay; the listing runs on, so
// that neither the start nor a reload waits on a dump or a walk of /proc.
func (w *listenerWatch) configure(ports listeners.Watched) {
	w.mu.Lock()
	w.ports = ports
	w.mu.Unlock()
	go w.refresh(true)
}

// run refreshes every listenerRefresh until ctx ends.
func (w *listenerWatch) run(ctx context.Context) {
	every(ctx, listenerRefresh, func() { w.refresh(false) })
}

// refresh lists the listeners again; all logs every unwatched one, else
// only those the last refresh did not find. An error is logged when it
// differs from the last, not every refresh: the namespace may be gone for
// a while (the daemon follows it when it is made again).
func (w *listenerWatch) refresh(all bool) {
	w.refreshing.Lock()
	defer w.refreshing.Unlock()
	w.mu.Lock()
	ports := w.ports
	w.mu.Unlock()
	ls, err := listeners.List(w.ns)
	if err != nil {
		w.mu.Lock()
		repeated := w.lastErr == err.Error()
		w.lastErr = err.Error()
		w.mu.Unlock()
		if all || !repeated {
			w.log.Warn("list the SIP listeners; their metrics keep the last count", "netns", w.ns, "err", err)
		}
		return
	}
	found := listeners.Unwatched(ls, ports)
	known := map[string]bool{}
	var fresh []listeners.Finding
	for _, f := range found {
		known[f.String()] = true
		if all || !w.known[f.String()] {
			fresh = append(fresh, f)
		}
	}
	w.known = known
	w.mu.Lock()
	w.counts, w.lastErr = listeners.Count(found), ""
	w.mu.Unlock()
	for _, u := range named(w.ns, fresh) {
		w.log.Warn("SIP listener not watched", "listener", u.String(), "netns", w.ns, "transport", u.Transport,
			"address", u.Address, "port", u.Port, "process", u.Process, "pid", u.PID, "reason", u.Reason)
	}
	if all && len(found) == 0 {
		w.log.Info("every SIP listener is watched", "ports_sip", ports)
	}
}

// count is the last count per transport; nil before a refresh succeeded.
func (w *listenerWatch) count() map[listeners.Transport]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts
}

// listenerCollector exports the last count of listenerWatch
// (docs/metrics.md, "The daemon's own"): a scrape never lists sockets.
type listenerCollector struct {
	count func() map[listeners.Transport]int
	desc  *prometheus.Desc
}

func newListenerCollector(count func() map[listeners.Transport]int) *listenerCollector {
	return &listenerCollector{count: count, desc: prometheus.NewDesc("xdpcac_sip_listeners_unwatched",
		"SIP listeners of the filter's network namespace it does not watch: UDP on a SIP port not in ports.sip, TCP on one not in ports.sip-tcp, SCTP on any.",
		[]string{"transport"}, nil)}
}

// Describe sends the one descriptor.
func (c *listenerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect emits a series per transport, 0 included; none before the
// first refresh succeeded, rather than a 0 that was never measured.
func (c *listenerCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.count()
	if n == nil {
		return
	}
	for _, t := range listeners.Transports() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n[t]), string(t))
	}
}
