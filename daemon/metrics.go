package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// metricsServer is /metrics on one address; listen "" serves nothing.
type metricsServer struct {
	listen string // as the file says it
	addr   string // as it is bound
	srv    *http.Server
	// pins are the attachments' maps, held open from scrape to scrape.
	pins *loader.PinCache
}

// stop closes the server and the maps its scrapes read.
func (m *metricsServer) stop() {
	if m.srv != nil {
		m.srv.Close()
	}
	if m.pins != nil {
		m.pins.Close()
	}
}

// serveMetrics serves /metrics on listen until stopped; every scrape
// reads the pinned maps and what only the daemon knows: the session
// agents' state and the 503s it sent.
func (d *Daemon) serveMetrics(listen string) (*metricsServer, error) {
	return d.serveMetricsOn(listen, nil)
}

// listenMetrics binds the metrics address, for serveMetricsOn: at start
// before anything is attached, so that an address taken refuses the start
// with the interfaces as they were. "" binds nothing.
func listenMetrics(listen string) (net.Listener, error) {
	if listen == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen %s: %w", listen, err)
	}
	return l, nil
}

// serveMetricsOn is serveMetrics on l, bound to listen already (nil: it
// is bound here).
func (d *Daemon) serveMetricsOn(listen string, l net.Listener) (*metricsServer, error) {
	if listen == "" {
		d.mu.Lock()
		d.status.Metrics = ""
		d.mu.Unlock()
		return &metricsServer{}, nil
	}
	names := &collector.FileNames{}
	pins := loader.NewPinCache(d.cfg.StateDir)
	c := collector.New(collector.ReaderFunc(func() (collector.Snapshot, error) {
		// The accounts' names are the file's in force, read once each
		// time one is put in force.
		d.mu.Lock()
		file, loaded := d.status.Config, d.status.LoadedAt
		d.mu.Unlock()
		n, nerr := names.Of(file, loaded)
		s, err := collector.ReadPinsNamed(pins, control.MonotonicCoarse(), n)
		err = errors.Join(err, nerr)
		s.SIPAnswered, s.SIPSuppressed = d.answers.answered.Load(), d.answers.suppressed.Load()
		s.Agents = d.agentStates()
		s.Egress = d.agentEgress()
		s.EgressAnswered, s.EgressUnanswered = d.egressAnswers.answered.Load(), d.egressAnswers.suppressed.Load()
		s.ForgedResponses = d.forged.Load()
		if n, ok := d.access.evicted(); ok {
			s.DenyEvicted = &n
		}
		s.Daemon = d.daemonState()
		return s, err
	}), version.String())
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if err := reg.Register(newFleetCollector(d.fleet.snapshot)); err != nil {
		return nil, fmt.Errorf("register fleet metrics: %w", err)
	}
	if err := reg.Register(newListenerCollector(d.listeners.count)); err != nil {
		return nil, fmt.Errorf("register SIP listener metrics: %w", err)
	}
	if l == nil {
		var err error
		if l, err = listenMetrics(listen); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      errorLog{d},
	}))
	// A scraper that stalls, or a client that never finishes its request,
	// holds a connection for no longer than these.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("metrics server", "err", err)
		}
	}()
	d.mu.Lock()
	d.status.Metrics = l.Addr().String()
	d.mu.Unlock()
	d.log.Info("serving metrics", "listen", l.Addr().String())
	return &metricsServer{listen: listen, addr: l.Addr().String(), srv: srv, pins: pins}, nil
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

// agentEgress is what egress admission did per agent, for the metrics.
func (d *Daemon) agentEgress() []collector.AgentEgress {
	d.mu.Lock()
	a := d.agents
	d.mu.Unlock()
	if a == nil {
		return nil
	}
	rows := a.egressRows()
	out := make([]collector.AgentEgress, 0, len(rows))
	for _, r := range rows {
		out = append(out, collector.AgentEgress{
			Name: r.Agent, Invites: r.Invites, Retransmits: r.Retransmits, Unanswered: r.Unanswered, ACKs: r.ACKs,
			Refused: map[string]uint64{cac.EgressConnection.String(): r.Connection, cac.EgressAgentDown.String(): r.AgentDown,
				cac.EgressCapacity.String(): r.Capacity},
			Sessions: maps.SessionsInForce{Max: r.MaxSessions, Held: r.Sessions},
		})
	}
	return out
}

// moveMetrics serves the metrics on listen in place of old: the new address
// is listened on before the old one closes, so a scrape finds one or the
// other; one whose port the old address holds (another host, the same
// port) is taken after the old closes, and the old is taken back if it
// cannot be. On an error the metrics stay where they were.
func (d *Daemon) moveMetrics(old *metricsServer, listen string) (*metricsServer, error) {
	m, err := d.serveMetrics(listen)
	if err == nil {
		old.stop()
		return m, nil
	}
	_, port, _ := net.SplitHostPort(listen)
	_, oldPort, _ := net.SplitHostPort(old.addr)
	if !errors.Is(err, syscall.EADDRINUSE) || old.srv == nil || port != oldPort {
		return old, err // someone else's port
	}
	old.stop()
	if m, err2 := d.serveMetrics(listen); err2 == nil {
		return m, nil
	}
	back, berr := d.serveMetrics(old.addr)
	if berr != nil {
		return &metricsServer{}, fmt.Errorf("%w; and the old address could not be taken back: %v", err, berr)
	}
	return back, err
}
