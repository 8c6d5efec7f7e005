package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

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
	var detachOnExit bool
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
			d := &daemon{g: g, cfgFile: cfgFile, log: log}
			return d.run(cmd.Context(), detachOnExit)
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file (required)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().BoolVar(&detachOnExit, "detach-on-exit", false, "detach every interface of FILE when stopped by SIGINT or SIGTERM")
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
	g       *globals
	cfgFile string
	log     *slog.Logger
}

func (d *daemon) run(ctx context.Context, detachOnExit bool) error {
	cfg, opts, err := loadOptions(d.cfgFile)
	if err != nil {
		return err
	}
	if len(cfg.Interfaces) == 0 {
		return fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", d.cfgFile)
	}
	if err := d.attachAll(cfg, opts); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	for {
		loopCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.loop(loopCtx, cfg) }()
		select {
		case err := <-done:
			cancel()
			if err != nil {
				return err
			}
			return d.exit(cfg, detachOnExit)
		case <-hup:
			cancel()
			if err := <-done; err != nil {
				return err
			}
			next, opts, err := loadOptions(d.cfgFile)
			if err == nil {
				err = d.attachAll(next, opts)
			}
			if err != nil {
				d.log.Error("reload refused; the configuration in force stays", "config", d.cfgFile, "err", err)
				continue
			}
			d.log.Info("reloaded", "config", d.cfgFile)
			cfg = next
		}
	}
}

// attachAll attaches every interface of cfg that is not attached yet, and
// puts cfg in force on all of them.
func (d *daemon) attachAll(cfg *config.Config, opts loader.Options) error {
	opts.StateDir = d.g.stateDir
	attached := 0
	for _, i := range cfg.Interfaces {
		a := loader.Attachment{Iface: i.Name, Netns: d.g.netns}
		if loader.IsAttached(d.g.stateDir, a) {
			attached++
			continue
		}
		opts.Mode = i.Mode
		mode, err := loader.Attach(a, opts)
		if err != nil {
			return err
		}
		d.log.Info("attached", "interface", a.String(), "mode", mode)
	}
	if attached > 0 {
		if _, err := loader.Apply(d.g.stateDir, opts); err != nil {
			return err
		}
	}
	return nil
}

// loop runs the control loop of cfg until ctx ends.
func (d *daemon) loop(ctx context.Context, cfg *config.Config) error {
	src, err := cpu.ParseSource(cfg.CPU.Source)
	if err != nil {
		return fmt.Errorf("%s: cpu.source: %w", d.cfgFile, err)
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
	p, err := loader.Open(d.g.stateDir, loader.Attachment{Iface: cfg.Interfaces[0].Name, Netns: d.g.netns})
	if err != nil {
		return err
	}
	defer p.Close()
	im := maps.InputMapsOf(&p.XdpMaps) // shared by every attachment
	l := &control.Loop{
		Sampler: sampler, Window: cpu.NewWindow(span), Buffers: watcher, Multiplier: mult,
		Interval: cfg.CPU.SampleInterval, Log: d.log,
		Write: func(in admission.Inputs) error { return maps.WriteInputs(im, in) },
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
