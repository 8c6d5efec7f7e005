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

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac/admission"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/sockbuf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

func newRunCmd(g *globals) *cobra.Command {
	var cfgFile, logFormat string
	var detachOnExit, force bool
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Attach every interface of FILE and run the control loop: CPU load, buffers, heartbeat",
		Long: `run attaches the filter to every interface FILE lists (or puts FILE in force
where it is attached already) and then, every cpu.sample-interval, measures
the CPU and the watched receive buffers and writes the load charge, the CPU
of the new model's gate and the buffer flag, with a heartbeat, to the fast
path. SIGHUP reads FILE again and puts it in force; a bad file changes
nothing. SIGINT and SIGTERM stop the loop and leave the filter attached with
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
			d.force = force
			return d.run(cmd.Context(), detachOnExit)
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file (required)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().BoolVar(&detachOnExit, "detach-on-exit", false, "detach every interface of FILE when stopped by SIGINT or SIGTERM")
	cmd.Flags().BoolVar(&force, "force", false, "replace another XDP program attached over netlink to an interface of FILE")
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
	g     *globals
	log   *slog.Logger
	force bool // replace foreign XDP programs
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
	// The lock comes first: a second daemon changes nothing.
	lk, err := lockDaemon(d.g.stateDir)
	if err != nil {
		return err
	}
	defer lk.unlock()
	cfg, opts, err := loadOptions(d.cfgFile())
	if err != nil {
		return err
	}
	if len(cfg.Interfaces) == 0 {
		return fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", d.cfgFile())
	}
	if err := d.attachAll(cfg, opts); err != nil {
		return err
	}
	d.mu.Lock()
	d.status.LoadedAt = time.Now()
	d.mu.Unlock()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
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
		loopCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.loop(loopCtx, cfg) }()
		call := d.wait(ctx, cfg, opts, done, links, hup)
		cancel()
		if call == nil { // the loop ended
			if err := <-done; err != nil {
				return err
			}
			return d.exit(cfg, detachOnExit)
		}
		if err := <-done; err != nil {
			return err
		}
		next, nextOpts, err := d.reload(call.file)
		if call.reply != nil {
			call.reply <- err
		}
		if err == nil {
			cfg, opts = next, nextOpts
		}
	}
}

// wait serves link events while the control loop runs, until the loop
// ends (nil) or a reload is asked for.
func (d *daemon) wait(ctx context.Context, cfg *config.Config, opts loader.Options, done chan error, links <-chan linkEvent, hup <-chan os.Signal) *applyCall {
	for {
		select {
		case err := <-done:
			done <- err // for the caller
			return nil
		case ev := <-links:
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
		case <-hup:
			return &applyCall{file: d.cfgFile()}
		case c := <-d.applies:
			return &c
		}
	}
}

// reload reads file and puts it in force; on any error nothing changes.
func (d *daemon) reload(file string) (*config.Config, loader.Options, error) {
	next, opts, err := loadOptions(file)
	if err == nil && len(next.Interfaces) == 0 {
		err = fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", file)
	}
	if err == nil {
		err = d.attachAll(next, opts)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.status.LastError = err.Error()
		d.log.Error("reload refused; the configuration in force stays", "config", file, "err", err)
		return nil, opts, err
	}
	d.status.Config, d.status.LoadedAt, d.status.LastError = file, time.Now(), ""
	d.log.Info("reloaded", "config", file)
	return next, opts, nil
}

// attachAll attaches every interface of cfg that is not attached yet,
// takes over those that are (Adopt: this version's program, pinned state
// kept, an interface that came back attached again), and puts cfg in force
// on all of them.
func (d *daemon) attachAll(cfg *config.Config, opts loader.Options) error {
	for _, i := range cfg.Interfaces {
		err := d.ensure(i, opts)
		if errors.Is(err, loader.ErrNoInterface) {
			// A BRAS brings access interfaces up after its daemons.
			d.log.Warn("interface missing; it gets the filter when it appears", "interface", i.Name, "err", err)
			continue
		}
		if err != nil {
			return err
		}
	}
	if atts, err := loader.List(d.g.stateDir); err != nil || len(atts) == 0 {
		return err // nothing attached yet: the first to appear gets opts
	}
	_, err := loader.Apply(d.g.stateDir, opts)
	return err
}

// ensure attaches one interface or takes it over.
func (d *daemon) ensure(i config.Interface, opts loader.Options) error {
	opts.StateDir, opts.Mode, opts.Force = d.g.stateDir, i.Mode, d.force
	a := loader.Attachment{Iface: i.Name, Netns: d.g.netns}
	if loader.IsAttached(d.g.stateDir, a) {
		did, err := loader.Adopt(a, opts)
		if err != nil {
			return err
		}
		d.log.Info("took over the attachment", "interface", a.String(), "program", string(did))
		return nil
	}
	mode, err := loader.Attach(a, opts)
	if err != nil {
		return err
	}
	d.log.Info("attached", "interface", a.String(), "mode", mode)
	return nil
}

// loop runs the control loop of cfg until ctx ends.
func (d *daemon) loop(ctx context.Context, cfg *config.Config) error {
	src, err := cpu.ParseSource(cfg.CPU.Source)
	if err != nil {
		return fmt.Errorf("cpu.source: %w", err)
	}
	sampler, err := cpu.NewSampler(src, cpu.Options{})
	if err != nil {
		return err
	}
	span, mult := cfg.CPU.SampleInterval, uint32(0)
	if ld := cfg.CallAdmission.Load; ld != nil {
		span, mult = ld.Lifetime, ld.Charge
	}
	var watcher *sockbuf.Watcher
	if b := cfg.Buffers; len(b.UDPPorts)+len(b.PacketProtocols) > 0 {
		// The protected daemons' sockets live beside the interfaces.
		err := loader.InNetns(d.g.netns, func() error {
			var err error
			watcher, err = sockbuf.NewWatcher(sockbuf.Watch{UDPPorts: b.UDPPorts, PacketProtocols: b.PacketProtocols})
			return err
		})
		if err != nil {
			return fmt.Errorf("watch receive buffers: %w", err)
		}
		defer watcher.Close()
	}
	// The measurements are shared by every attachment: any one's maps do.
	// None may be attached yet, while the interfaces come up.
	var p *loader.Pinned
	defer func() {
		if p != nil {
			p.Close()
		}
	}()
	write := func(in admission.Inputs) error {
		if p == nil {
			atts, err := loader.List(d.g.stateDir)
			if err != nil {
				return err
			}
			if len(atts) == 0 {
				return errors.New("no interface attached yet")
			}
			if p, err = loader.Open(d.g.stateDir, atts[0]); err != nil {
				return err
			}
		}
		return maps.WriteInputs(maps.InputMapsOf(&p.XdpMaps), in)
	}
	l := &control.Loop{
		Sampler: sampler, Window: cpu.NewWindow(span), Buffers: watcher, Multiplier: mult,
		Interval: cfg.CPU.SampleInterval, Log: d.log, Write: write,
	}
	d.log.Info("control loop running", "cpu", src.String(), "interval", cfg.CPU.SampleInterval,
		"stale_after", cfg.StaleAfter, "on_stale", cfg.OnStale)
	return l.Run(ctx)
}

// exit leaves the filter attached (fail-static) or detaches it.
func (d *daemon) exit(cfg *config.Config, detach bool) error {
	if !detach {
		d.log.Info("stopped; the filter stays attached with its last limits", "on_stale", cfg.OnStale, "stale_after", cfg.StaleAfter)
		return nil
	}
	var errs []error
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
