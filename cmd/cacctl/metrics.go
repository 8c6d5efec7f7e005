package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// buildVersion is what the Go toolchain stamped into the binary: the
// module version when built from a tagged module, else the commit.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", ""
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel+" + rev + dirty
}

// serveMetrics serves /metrics on listen until the returned function is
// called; every scrape reads the pinned maps.
func (d *daemon) serveMetrics(listen string) (func(), error) {
	if listen == "" {
		return func() {}, nil
	}
	c := collector.New(collector.ReaderFunc(func() (collector.Snapshot, error) {
		s, err := collector.ReadPinned(d.g.stateDir, control.MonotonicCoarse())
		s.SIPAnswered, s.SIPSuppressed = d.answers.answered.Load(), d.answers.suppressed.Load()
		return s, err
	}), buildVersion())
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
	return func() { srv.Close() }, nil
}

// errorLog puts promhttp's errors into the daemon's log.
type errorLog struct{ d *daemon }

func (e errorLog) Println(v ...any) { e.d.log.Warn("metrics", "err", fmt.Sprint(v...)) }
