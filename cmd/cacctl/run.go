package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
)

func newRunCmd(g *globals) *cobra.Command {
	var cfgFile, logFormat, rejectsLog string
	var detachOnExit, force bool
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Attach every interface of FILE and run the control loop: CPU load, buffers, heartbeat",
		Long: `run attaches the filter to every interface FILE lists (or puts FILE in force
where it is attached already) and then, every cpu.sample-interval, measures
the CPU and the watched receive buffers and writes the load charge, the CPU
of the new model's gate and the buffer flag, with a heartbeat, to the fast
path. It appends every finished second of reject records to --rejects-log
as a JSON line. SIGHUP reads FILE again and puts it in force (a bad file
changes nothing) and reopens the log. SIGINT and SIGTERM stop the loop and leave the filter attached with
its last limits: the heartbeat ages and on-stale decides, unless
--detach-on-exit.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(logFormat)
			if err != nil {
				return err
			}
			if abs, err := filepath.Abs(cfgFile); err == nil {
				cfgFile = abs // SIGHUP reads it again, wherever the daemon's cwd is
			}
			d := newDaemon(g, cfgFile, log)
			d.force, d.rejectsLog = force, rejectsLog
			return d.run(cmd.Context(), detachOnExit)
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file (required)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().BoolVar(&detachOnExit, "detach-on-exit", false, "detach every interface of FILE when stopped by SIGINT or SIGTERM")
	cmd.Flags().BoolVar(&force, "force", false, "replace another XDP program attached over netlink to an interface of FILE")
	cmd.Flags().StringVar(&rejectsLog, "rejects-log", "/var/log/xdpcac/rejects.jsonl", "file the finished reject records are appended to as JSON lines, reopened on SIGHUP (\"\" for none)")
	cmd.MarkFlagRequired("config")
	return cmd
}

func newLogger(format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, nil)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, got %q", format)
}

// daemon is `cacctl run`.
type daemon struct {
	g          *globals
	log        *slog.Logger
	force      bool   // replace foreign XDP programs
	rejectsLog string // where the journal writes
	journal    *journal

	agents       *sipAgents // guarded by mu; nil without agents or rejects
	agentsCancel context.CancelFunc
	// answers counts the 503s of refused SIP requests over the daemon's
	// life, whatever reloads restart the agents.
	answers answerCounts

	// held are the links of the attachments, open while the daemon runs:
	// the filter outlives its pins (bpffs unmounted under it).
	held map[loader.Attachment]link.Link
	// pinErrs are the attachments whose pins could not be made again,
	// with the error last logged (keepPins).
	pinErrs map[loader.Attachment]string
	// applies carries API applies to the goroutine that owns the
	// configuration, as SIGHUP does.
	applies chan applyCall

	mu     sync.Mutex // guards status
	status apiStatus
}

// applyCall is one apply through the API, with where its answer goes.
type applyCall struct {
	file  string
	reply chan error
}

func newDaemon(g *globals, cfgFile string, log *slog.Logger) *daemon {
	return &daemon{
		g: g, log: log, applies: make(chan applyCall),
		status: apiStatus{PID: os.Getpid(), Config: cfgFile, Since: time.Now(), StateDir: g.stateDir, Netns: g.netns},
	}
}

func (d *daemon) cfgFile() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status.Config
}

func (d *daemon) run(ctx context.Context, detachOnExit bool) error {
	// Signals first: a reload asked for while starting waits its turn.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// The lock comes before anything changes: a second daemon changes
	// nothing.
	lk, err := lockDaemon(d.g.stateDir)
	if err != nil {
		return err
	}
	defer lk.unlock()
	cfg, opts, err := loadOptions(d.cfgFile())
	if err == nil && len(cfg.Interfaces) == 0 {
		err = fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", d.cfgFile())
	}
	if err == nil {
		err = d.checkInterfaces(cfg)
	}
	if err != nil {
		return err
	}
	// The rejects log is refused before anything is attached (a planted
	// link, say): a daemon that cannot write it changes nothing.
	if err := checkRejectsLog(d.rejectsLog); err != nil {
		return err
	}
	m, err := d.newMeasure(cfg)
	if err != nil {
		return err
	}
	defer func() { m.close() }()
	defer d.release()
	if err := d.attachAll(cfg, opts); err != nil {
		return err
	}
	d.mu.Lock()
	d.status.LoadedAt = time.Now()
	d.mu.Unlock()
	if d.journal, err = d.startJournal(ctx, d.rejectsLog); err != nil {
		return err
	}
	defer d.journal.close()
	if err := d.swapAgents(ctx, cfg); err != nil {
		return err
	}
	defer d.stopAgents()
	stopAPI, err := d.serveAPI()
	if err != nil {
		return err
	}
	defer stopAPI()
	// The metrics address is read at start; a reload keeps it.
	stopMetrics, err := d.serveMetrics(cfg.Metrics.Listen)
	if err != nil {
		return err
	}
	defer stopMetrics()
	links, err := d.watchLinks(ctx)
	if err != nil {
		return err
	}

	for {
		d.log.Info("control loop running", "cpu", cfg.CPU.Source, "interval", cfg.CPU.SampleInterval,
			"stale_after", cfg.StaleAfter, "on_stale", cfg.OnStale)
		loopCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.loop.Run(loopCtx) }()
		for restart := false; !restart; {
			call := d.wait(cfg, opts, done, links, hup)
			if call == nil { // stopped, or the loop failed
				cancel()
				if err := <-done; err != nil {
					return err
				}
				return d.exit(cfg, detachOnExit)
			}
			if err := d.journal.reopen(); err != nil {
				d.log.Warn("reopen the rejects log", "err", err)
			}
			next, nextOpts, nm, err := d.reload(call.file, cfg)
			if err != nil {
				if call.reply != nil {
					call.reply <- err
				}
				continue // the loop and the configuration in force stay
			}
			cfg, opts = next, nextOpts
			if aerr := d.swapAgents(ctx, cfg); aerr != nil {
				d.log.Error("session agents of the new configuration", "err", aerr)
				err = fmt.Errorf("%s is in force, but its session agents are not watched: %w", call.file, aerr)
			}
			if call.reply != nil {
				call.reply <- err
			}
			if nm != nil { // the measuring changed: a new loop
				cancel()
				<-done
				m.close()
				m, restart = nm, true
			}
		}
	}
}

// reload reads file and puts it in force, with a new measure when what
// the loop measures changed (nil when it did not). On any error nothing
// changes: the measure is built before anything is attached or applied,
// and attachAll takes back what it attached.
func (d *daemon) reload(file string, cur *config.Config) (*config.Config, loader.Options, *measure, error) {
	next, opts, err := loadOptions(file)
	if err == nil && len(next.Interfaces) == 0 {
		err = fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", file)
	}
	if err == nil {
		err = d.checkInterfaces(next)
	}
	var nm *measure
	if err == nil && !sameMeasure(cur, next) {
		nm, err = d.newMeasure(next)
	}
	if err == nil {
		opts.AgentAddrs = d.carryAgentAddrs(next, opts.AgentAddrs)
	}
	if err == nil {
		if err = d.attachAll(next, opts); err != nil && nm != nil {
			nm.close()
			nm = nil
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.status.LastError = err.Error()
		d.log.Error("reload refused; the configuration in force stays", "config", file, "err", err)
		return nil, opts, nil, err
	}
	d.status.Config, d.status.LoadedAt, d.status.LastError = file, time.Now(), ""
	d.log.Info("reloaded", "config", file)
	return next, opts, nm, nil
}

// wait serves link events while the control loop runs, until the loop
// ends or a stop is asked for (nil), or a reload is asked for.
func (d *daemon) wait(cfg *config.Config, opts loader.Options, done chan error, links <-chan linkEvent, hup <-chan os.Signal) *applyCall {
	pins := time.NewTicker(pinCheckEvery)
	defer pins.Stop()
	for {
		select {
		case <-pins.C:
			d.keepPins()
		case err := <-done:
			done <- err // for the caller
			return nil
		case ev := <-links:
			d.linkEvent(cfg, opts, ev)
		case <-hup:
			return &applyCall{file: d.cfgFile()}
		case c := <-d.applies:
			return &c
		}
	}
}

// linkEvent attaches an interface of cfg that appeared, or came back.
func (d *daemon) linkEvent(cfg *config.Config, opts loader.Options, ev linkEvent) {
	for _, i := range cfg.Interfaces {
		if i.Name != ev.name {
			continue
		}
		a := loader.Attachment{Iface: i.Name, Netns: d.g.netns}
		switch {
		case ev.gone:
			d.log.Warn("interface gone; the filter returns with it", "interface", a.String())
		case loader.NeedsAttach(d.g.stateDir, a):
			if err := d.ensure(i, opts); err != nil {
				d.log.Error("attach again", "interface", a.String(), "err", err)
			}
		}
	}
}

// attachAll attaches every interface of cfg that is not attached yet,
// takes over those that are (Adopt: this version's program, pinned state
// kept, an interface that came back attached again), and then puts cfg in
// force on all of them. On an error it detaches what it attached, so the
// limits in force stay as they were.
func (d *daemon) attachAll(cfg *config.Config, opts loader.Options) error {
	var fresh []loader.Attachment
	undo := func(err error) error {
		for _, a := range fresh {
			d.unhold(a)
			if derr := loader.Detach(a, d.g.stateDir); derr != nil {
				d.log.Error("take back an attachment", "interface", a.String(), "err", derr)
			}
		}
		return err
	}
	for _, i := range cfg.Interfaces {
		a := loader.Attachment{Iface: i.Name, Netns: d.g.netns}
		before := loader.IsAttached(d.g.stateDir, a)
		err := d.ensure(i, opts)
		if errors.Is(err, loader.ErrNoInterface) {
			// A BRAS brings access interfaces up after its daemons.
			d.log.Warn("interface missing; it gets the filter when it appears", "interface", i.Name, "err", err)
			continue
		}
		if err != nil {
			return undo(err)
		}
		if !before {
			fresh = append(fresh, a)
		}
	}
	if atts, err := loader.List(d.g.stateDir); err != nil || len(atts) == 0 {
		return undo(err) // nothing attached yet: the first to appear starts with opts
	}
	if _, err := loader.Apply(d.g.stateDir, opts); err != nil {
		return undo(err)
	}
	return nil
}

// ensure attaches one interface or takes it over, and holds its link.
func (d *daemon) ensure(i config.Interface, opts loader.Options) error {
	opts.StateDir, opts.Mode, opts.Force = d.g.stateDir, i.Mode, d.force
	a := loader.Attachment{Iface: i.Name, Netns: d.g.netns}
	opts.Notify = func(msg string) { d.log.Warn(msg, "interface", a.String()) }
	if l, ok := d.held[a]; ok && !loader.IsAttached(d.g.stateDir, a) {
		// Pins gone under a filter this daemon holds: pin it again rather
		// than attach a second one with fresh state.
		if _, err := loader.Repin(d.g.stateDir, a, l); err != nil {
			return fmt.Errorf("the pins of %s are gone: %w", a, err)
		}
	}
	if _, ok := d.held[a]; ok && !loader.NeedsAttach(d.g.stateDir, a) {
		// This daemon attached it or took it over, so it runs this
		// version's program: a reload has nothing to check here, and
		// skips loading the program again (half a second of verifier).
		return nil
	}
	if loader.IsAttached(d.g.stateDir, a) {
		did, err := loader.Adopt(a, opts)
		if err != nil {
			return err
		}
		d.log.Info("took over the attachment", "interface", a.String(), "program", string(did))
		d.hold(a)
		return nil
	}
	mode, err := loader.Attach(a, opts)
	if err != nil {
		return err
	}
	d.log.Info("attached", "interface", a.String(), "mode", mode)
	d.hold(a)
	return nil
}

// exit leaves the filter attached (fail-static) or detaches it.
func (d *daemon) exit(cfg *config.Config, detach bool) error {
	if !detach {
		d.log.Info("stopped; the filter stays attached with its last limits", "on_stale", cfg.OnStale, "stale_after", cfg.StaleAfter)
		return nil
	}
	var errs []error
	d.release()
	for _, i := range cfg.Interfaces {
		a := loader.Attachment{Iface: i.Name, Netns: d.g.netns}
		if err := loader.Detach(a, d.g.stateDir); err != nil {
			errs = append(errs, err)
			continue
		}
		d.log.Info("detached", "interface", a.String())
	}
	return errors.Join(errs...)
}
