package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/daemon"
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
			d := daemon.New(daemon.Config{
				File: cfgFile, StateDir: g.stateDir, Netns: g.netns, Log: log,
				Force: force, RejectsLog: rejectsLog, DetachOnExit: detachOnExit,
			})
			return runDaemon(cmd.Context(), d)
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

// runDaemon runs d until SIGINT or SIGTERM, and reloads it on SIGHUP.
// Signals are taken before the daemon starts: a reload asked for while it
// starts waits its turn.
func runDaemon(ctx context.Context, d *daemon.Daemon) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				d.Reload()
			}
		}
	}()
	return d.Run(ctx)
}
