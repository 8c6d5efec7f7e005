package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/daemon"
)

func newRunCmd(g *globals) *cobra.Command {
	var cfgFile, logFormat, rejectsLog string
	var detachOnExit, force bool
	var rotate daemon.Rotation
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Attach every interface of FILE and run the control loop: CPU load, buffers, heartbeat",
		Long: `run attaches the filter to every interface FILE lists (or puts FILE in force
where it is attached already; an interface missing at start gets the
filter when it appears) and then, every cpu.sample-interval, measures the
CPU and the watched receive buffers and writes the load charge, the CPU of
the new model's gate and the buffer flag, with a heartbeat, to the fast
path. It appends every finished second of reject records to --rejects-log
as a JSON line, and rotates it at --rejects-log-max. SIGHUP reads FILE
again (or the file cacctl apply --adopt named) and puts it in force (a bad
file changes nothing) and reopens the log. Under systemd (Type=notify) it
says when it is ready, reloading and stopping, and pings the watchdog
while its control loop runs. SIGINT and SIGTERM stop the loop and leave
the filter attached with its last limits: the heartbeat ages and on-stale
decides, unless --detach-on-exit.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(logFormat)
			if err != nil {
				return usageError{err}
			}
			if abs, err := filepath.Abs(cfgFile); err == nil {
				cfgFile = abs // SIGHUP reads it again, wherever the daemon's cwd is
			}
			if err := rotationCheck(rotate); err != nil {
				return usageError{err}
			}
			watchdog, _ := sd.SdWatchdogEnabled(false)
			d := daemon.New(daemon.Config{
				File: cfgFile, StateDir: g.stateDir, Netns: g.netns, Log: log,
				Force: force, RejectsLog: rejectsLog, Rotation: rotate, DetachOnExit: detachOnExit,
				Notify:   func(state string) { sd.SdNotify(false, state) },
				Watchdog: watchdog,
				Reader:   readerFor(*g),
			})
			if err := runDaemon(cmd.Context(), d); err != nil {
				// In the log's format, so that a JSON journal stays JSON.
				log.Error("cacctl run stopped", "err", err)
				return loggedError{err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file (required)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().BoolVar(&detachOnExit, "detach-on-exit", false, "detach every interface of FILE when stopped by SIGINT or SIGTERM")
	cmd.Flags().BoolVar(&force, "force", false, "replace another XDP program attached over netlink to an interface of FILE")
	cmd.Flags().StringVar(&rejectsLog, "rejects-log", "/var/log/xdpcac/rejects.jsonl", "file the finished reject records are appended to as JSON lines, reopened on SIGHUP (\"\" for none)")
	cmd.Flags().Int64Var(&rotate.MaxBytes, "rejects-log-max", 64<<20, "rotate the rejects log when it reaches this many bytes (0: never)")
	cmd.Flags().IntVar(&rotate.Keep, "rejects-log-keep", 4, "rotated rejects logs kept (FILE.1 the newest)")
	cmd.MarkFlagRequired("config")
	return cmd
}

// newLogger is the daemon's log on stderr. Durations are written as
// Go durations ("1.5s"), not integers of nanoseconds, in both formats.
func newLogger(format string) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindDuration {
			a.Value = slog.StringValue(a.Value.Duration().String())
		}
		return a
	}}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
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

// rotationCheck refuses a rotation the daemon could not keep.
func rotationCheck(r daemon.Rotation) error {
	if r.MaxBytes < 0 || r.Keep < 0 || r.MaxBytes > 0 && r.MaxBytes < 1<<16 {
		return fmt.Errorf("--rejects-log-max wants 0 or at least 65536 bytes, --rejects-log-keep 0 or more; got %d and %d", r.MaxBytes, r.Keep)
	}
	return nil
}
