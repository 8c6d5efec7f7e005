package daemon

import (
	"context"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
)

// every calls fn each interval until ctx ends, the first time an
// interval from now.
func every(ctx context.Context, interval time.Duration, fn func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fn()
		}
	}
}

// notify tells the service manager, if there is one.
func (d *Daemon) notify(state string) {
	if d.cfg.Notify != nil {
		d.cfg.Notify(state)
	}
}

// pingWatchdog pings the service manager's watchdog twice an interval
// while the control loop has written within three of its intervals (or
// the watchdog's, when longer) and the goroutine that serves reloads,
// applies and link events came round within the watchdog's: either that
// hangs stops the pings, and the service manager restarts the daemon.
func (d *Daemon) pingWatchdog(ctx context.Context) {
	if d.cfg.Watchdog <= 0 {
		return
	}
	every(ctx, d.cfg.Watchdog/2, func() {
		alive := max(3*time.Duration(d.loopEvery.Load()), d.cfg.Watchdog)
		if time.Since(time.Unix(0, d.wrote.Load())) < alive && time.Since(time.Unix(0, d.served.Load())) < max(3*pinCheckEvery, d.cfg.Watchdog) {
			d.notify("WATCHDOG=1")
		}
	})
}

// keepTableSizes is opts with the table sizes in force, when the filter
// is attached already with others than the file's: at start the daemon
// takes over what runs and says what a restart of the interfaces would
// change, where an apply refuses (loader.TableSizeError). A daemon that
// would not start loops under Restart=on-failure.
func (d *Daemon) keepTableSizes(opts loader.Options) loader.Options {
	sources, dialogs, err := loader.TableSizes(d.cfg.StateDir)
	if err != nil {
		return opts // nothing attached yet: the file sizes them
	}
	if opts.SourceTable != 0 && opts.SourceTable != sources {
		d.log.Warn("per-source-table of the file differs from the table in force, which stays; detach every interface and start again to change it",
			"in_force", sources, "file", opts.SourceTable)
	}
	if opts.DialogTable != 0 && !cac.SameDialogTable(opts.DialogTable, dialogs) {
		d.log.Warn("dialog-table of the file differs from the table in force, which stays; detach every interface and start again to change it",
			"in_force", dialogs, "file", opts.DialogTable)
	}
	if t, err := loader.TablesInForce(d.cfg.StateDir); err == nil && opts.DenyTable != 0 && t.Denied != 0 && opts.DenyTable != t.Denied {
		d.log.Warn("access.auto-deny.table of the file differs from the deny table in force, which stays with the sources it denies; detach every interface and start again to change it",
			"in_force", t.Denied, "file", opts.DenyTable)
	}
	opts.SourceTable, opts.DialogTable, opts.DenyTable = 0, 0, 0
	return opts
}
