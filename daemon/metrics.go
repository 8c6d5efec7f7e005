package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// metricsServer is /metrics on one address; listen "" serves nothing.
type metricsServer struct {
	listen string
	srv    *http.Server
}

// stop closes the server.
func (m *metricsServer) stop() {
	if m.srv != nil {
		m.srv.Close()
	}
}

// serveMetrics serves /metrics on listen until stopped; every scrape
// reads the pinned maps and what only the daemon knows: the session
// agents' state and the 503s it sent.
func (d *Daemon) serveMetrics(listen string) (*metricsServer, error) {
	if listen == "" {
		d.mu.Lock()
		d.status.Metrics = ""
		d.mu.Unlock()
		return &metricsServer{}, nil
	}
	names := &collector.FileNames{}
	c := collector.New(collector.ReaderFunc(func() (collector.Snapshot, error) {
		// The accounts' names are the file's in force, read once each
		// time one is put in force.
		d.mu.Lock()
		file, loaded := d.status.Config, d.status.LoadedAt
		d.mu.Unlock()
		n, nerr := names.Of(file, loaded)
		s, err := collector.ReadPinnedNamed(d.cfg.StateDir, control.MonotonicCoarse(), n)
		err = errors.Join(err, nerr)
		s.SIPAnswered, s.SIPSuppressed = d.answers.answered.Load(), d.answers.suppressed.Load()
		s.Agents = d.agentStates()
		return s, err
	}), version.String())
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      errorLog{d},
	}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("metrics server", "err", err)
		}
	}()
	d.mu.Lock()
	d.status.Metrics = l.Addr().String()
	d.mu.Unlock()
	d.log.Info("serving metrics", "listen", l.Addr().String())
	return &metricsServer{listen: listen, srv: srv}, nil
}

// errorLog puts promhttp's errors into the daemon's log.
type errorLog struct{ d *Daemon }

func (e errorLog) Println(v ...any) { e.d.log.Warn("metrics", "err", fmt.Sprint(v...)) }

// agentStates are the session agents' targets as the collector exports
// them; none without agents.
func (d *Daemon) agentStates() []collector.Agent {
	d.mu.Lock()
	a := d.agents
	d.mu.Unlock()
	if a == nil {
		return nil
	}
	rows := a.rows()
	out := make([]collector.Agent, 0, len(rows))
	for _, r := range rows {
		out = append(out, collector.Agent{Name: r.Agent, Destination: r.Destination.String(), Realm: r.Realm, Up: r.Status.InService})
	}
	return out
}
