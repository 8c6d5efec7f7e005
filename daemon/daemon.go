package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
)

// Config is everything a daemon is built from: nothing is read from flags
// or the environment below it.
type Config struct {
	// File is the configuration put in force at start, and read again by
	// Reload; an absolute path, since the daemon's cwd may change.
	File string
	// StateDir is the bpffs directory of the attachments' pins.
	StateDir string
	// Netns names the network namespace of the interfaces ("" this one).
	Netns string
	// Log gets every event of the daemon's life.
	Log *slog.Logger
	// Force replaces a foreign XDP program attached over netlink.
	Force bool
	// RejectsLog is the file finished reject records are appended to ("" none).
	RejectsLog string
	// Rotation is when the rejects log is rotated, and how many are kept.
	Rotation Rotation
	// DetachOnExit takes the filter off every interface of File when Run
	// ends; else it stays with its last limits, and on-stale decides once
	// the heartbeat ages.
	DetachOnExit bool
	// Now is the wall clock of the status; nil is time.Now.
	Now func() time.Time
	// Notify tells the service manager of the daemon's state (sd_notify:
	// READY=1, RELOADING=1, STOPPING=1, WATCHDOG=1); nil tells nobody.
	Notify func(state string)
	// Watchdog is the service manager's watchdog interval (0 none): the
	// daemon pings it twice an interval while its control loop writes.
	Watchdog time.Duration
	// Reader runs a read command (api.ReadRequest) for a member of
	// api.read-group, writing what it prints to out; nil serves none.
	// The CLI gives its own commands, so that a reader sees what root
	// would.
	Reader func(args []string, out io.Writer) (exitCode int, err error)
}

// Rotation rotates the rejects log once it holds MaxBytes (0 never):
// FILE becomes FILE.1, FILE.1 FILE.2, and so on up to Keep files.
type Rotation struct {
	MaxBytes int64
	Keep     int
}

// Daemon is `cacctl run`: it attaches the interfaces of its configuration
// and runs the control loop, the reject journal, the session agents, the
// API socket and the metrics server until its context ends.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	journal *journal

	// The daemon's jobs, each in a room of its own (docs/design.md, "The
	// daemon's rooms"): the SIP event feed hands the fast path's events to the
	// session keeper, the 503 answerer and the agents monitor; the
	// answerer and the monitor are made anew by each configuration, and
	// each of them failing leaves the others going.
	feed       *sipFeed
	answer     *answerer  // guarded by mu; nil when no class answers, or it failed
	answerRoom *room      // the answerer's state
	agents     *sipAgents // guarded by mu; nil without agents, or when they failed
	agentsRoom *room      // the monitor's state
	// agentsCancel ends the monitor's goroutines; agentsCfg are the
	// agents of the configuration last put in force (agentsKnown: one
	// was), whose indexes a reload compares; agentStatuses what their
	// targets were, for a monitor started after one that failed.
	agentsCancel  context.CancelFunc
	agentsCfg     []config.SessionAgent
	agentsKnown   bool
	agentStatuses map[agents.TargetKey]agents.Status
	// answers counts the 503s of refused SIP requests over the daemon's
	// life, whatever reloads restart the agents.
	answers answerCounts
	// egressAnswers counts the answers to INVITEs refused at egress on
	// session agents' behalf, and those that could not be sent.
	egressAnswers answerCounts
	// forged counts agents' out-service responses that answered no
	// request the SIP server sent, which changed nothing.
	forged atomic.Uint64
	// sessions gives back the sessions of dialogs that end, across
	// reloads (docs/design.md, "Capacity").
	sessions *sessionKeeper
	// fleet renews the leases of fleet-scope levels, across reloads
	// (docs/design.md, "Fleet").
	fleet *fleetRunner
	// listeners names the SIP listeners the configuration in force does
	// not watch (docs/design.md, "SIP listeners").
	listeners *listenerWatch
	// violations reads the counters each second for show violations.
	violations *violationWatch
	// access records the deny table's sources (docs/design.md, "Auto-deny").
	access *denyWatch

	// held are the links of the attachments, open while the daemon runs:
	// the filter outlives its pins (bpffs unmounted under it).
	held map[loader.Attachment]link.Link
	// pinErrs are the attachments whose pins could not be made again,
	// with the error last logged (keepPins).
	pinErrs map[loader.Attachment]string
	// applies carries API applies to the goroutine that owns the
	// configuration, as Reload does.
	applies chan applyCall
	// reloads carries Reload's asks; one waits while another is served.
	reloads chan struct{}

	// wrote is when the control loop last wrote its measurements (unix
	// ns), and loopEvery its interval; served when the goroutine that owns
	// the configuration (reloads, applies, link events, pins) last came
	// round: the watchdog pings while both do.
	wrote, loopEvery, served atomic.Int64

	mu     sync.Mutex // guards status, reloadRefused and the readers' group
	status api.Status
	// reloadRefused: the last reload was refused and the file before it
	// stays in force, until one succeeds (the metric
	// xdpcac_config_last_reload_successful).
	reloadRefused bool
	// readGID and readName are api.read-group in force (-1 and "": none).
	readGID  int
	readName string
	// reading holds a token for each read command running for a reader.
	reading chan struct{}
}

// applyCall is one apply through the API, or a reload, with where its
// answer goes.
type applyCall struct {
	file  string
	adopt bool // the file SIGHUP reads from now on
	reply chan error
}

// New builds a daemon of cfg; Run starts it.
func New(cfg Config) *Daemon {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Daemon{
		cfg: cfg, log: cfg.Log, sessions: newSessionKeeper(cfg.Log), answerRoom: newRoom("answers"), agentsRoom: newRoom("agents"), fleet: newFleetRunner(cfg.Log, cfg.StateDir), listeners: newListenerWatch(cfg.Netns, cfg.Log), violations: newViolationWatch(cfg.StateDir), applies: make(chan applyCall), reloads: make(chan struct{}, 1), readGID: -1, reading: make(chan struct{}, 2),
		status: api.Status{PID: os.Getpid(), Config: cfg.File, ReloadConfig: cfg.File, PinsLost: []string{}, Interfaces: []string{}, Since: cfg.Now(), StateDir: cfg.StateDir, Netns: cfg.Netns},
	}
}

// Reload reads the configuration file in force again and puts it in force
// (SIGHUP), and reopens the rejects log; a bad file changes nothing. It
// does not wait: the daemon serves it when it can.
func (d *Daemon) Reload() {
	select {
	case d.reloads <- struct{}{}:
	default: // one is already waiting
	}
}

// reloadFile is the file a reload reads.
func (d *Daemon) reloadFile() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status.ReloadConfig
}

// Run runs the daemon until ctx ends, or the control loop fails. What it
// refuses at start (a second daemon, a bad file, interfaces none of which
// exist, a rejects log it may not write) changes nothing.
func (d *Daemon) Run(ctx context.Context) error {
	// The lock comes before anything changes: a second daemon changes
	// nothing.
	lk, err := lockDaemon(d.cfg.StateDir)
	if err != nil {
		return err
	}
	defer lk.unlock()
	cfg, opts, err := LoadOptions(d.cfg.File)
	if err == nil && len(cfg.Interfaces) == 0 {
		err = fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", d.cfg.File)
	}
	if err == nil {
		err = d.checkInterfaces(cfg)
	}
	if err != nil {
		return err
	}
	// The rejects log and the readers' group are refused before anything
	// is attached (a planted link, a typo): a daemon that cannot serve
	// them changes nothing.
	if err := checkRejectsLog(d.cfg.RejectsLog); err != nil {
		return err
	}
	readGID, err := lookupReadGroup(cfg.API.ReadGroup)
	if err != nil {
		return fmt.Errorf("%s: %w", d.cfg.File, err)
	}
	m, err := d.newMeasure(cfg)
	if err != nil {
		return err
	}
	defer func() { m.close() }()
	d.loopEvery.Store(int64(m.loop.Interval))
	if err := d.preflight(cfg); err != nil {
		return err
	}
	// The sockets are bound before anything is attached too: an address
	// or a socket taken refuses the start with the interfaces as they
	// were, not under limits no daemon serves.
	metricsL, err := listenMetrics(cfg.Metrics.Listen)
	if err != nil {
		return err
	}
	defer closeListener(metricsL) // the server closes it too: a second close does nothing
	apiL, err := listenAPI(api.PathsOf(d.cfg.StateDir).Socket)
	if err != nil {
		return err
	}
	stopAPI := apiL.close
	defer func() { stopAPI() }()
	if err := d.setReadGroup(apiL.path, readGID, cfg.API.ReadGroup); err != nil {
		return err
	}
	defer d.release()
	opts = d.keepTableSizes(opts)
	fresh, err := d.attachAll(cfg, opts)
	if err != nil {
		return err
	}
	// What fails from here to READY takes back what this start attached
	// (d.undoAttach): a start refused leaves no filter behind it, where a
	// service manager would start it again and again.
	ready := false
	defer func() {
		if !ready {
			d.undoAttach(fresh)
		}
	}()
	d.mu.Lock()
	d.status.LoadedAt, d.status.Interfaces = d.cfg.Now(), d.configured(cfg)
	d.mu.Unlock()
	d.listeners.configure(WatchedPorts(cfg))
	listenersCtx, stopListeners := context.WithCancel(ctx)
	defer stopListeners()
	go d.listeners.run(listenersCtx)
	go d.violations.run(listenersCtx)
	if d.journal, err = d.startJournal(ctx, d.cfg.RejectsLog); err != nil {
		return err
	}
	defer d.journal.close()
	accessPins := loader.NewPinCache(d.cfg.StateDir)
	d.access = newDenyWatch(d.log, accessPins, d.journal.addAll)
	accessCtx, stopAccess := context.WithCancel(ctx)
	accessDone := make(chan struct{})
	go func() { d.access.run(accessCtx); close(accessDone) }()
	defer func() { stopAccess(); <-accessDone; accessPins.Close() }() // before the journal closes
	if err := d.sessions.start(ctx, d.cfg.StateDir); err != nil {
		return err
	}
	defer d.sessions.stop()
	if d.feed, err = startFeed(ctx, d.cfg.StateDir, d.log, d.sessions, &d.answers); err != nil {
		return err
	}
	defer d.feed.stop()
	// At start, a SIP job that cannot run refuses the start, which
	// changes nothing; at a reload it leaves its room failed.
	if err := d.swapSIP(ctx, cfg); err != nil {
		d.stopSIP()
		return err
	}
	defer d.stopSIP()
	if err := d.fleet.configure(ctx, cfg, opts.Policy); err != nil {
		return err
	}
	defer d.fleet.stop()
	metrics, err := d.serveMetricsOn(cfg.Metrics.Listen, metricsL)
	if err != nil {
		return err
	}
	defer func() { metrics.stop() }()
	links, err := d.watchLinks(ctx)
	if err != nil {
		return err
	}
	go d.pingWatchdog(ctx)
	stopServing, err := d.serveAPI(apiL)
	if err != nil {
		return err
	}
	stopAPI = stopServing
	ready = true
	d.notify("READY=1\nSTATUS=enforcing " + d.cfg.File)
	defer d.notify("STOPPING=1")

	for {
		d.log.Info("control loop running", "cpu", cfg.CPU.Source, "interval", cfg.CPU.SampleInterval,
			"stale_after", cfg.StaleAfter, "on_stale", cfg.OnStale)
		loopCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.loop.Run(loopCtx) }()
		for restart := false; !restart; {
			call := d.wait(cfg, opts, done, links)
			if call == nil { // stopped, or the loop failed
				cancel()
				if err := <-done; err != nil {
					return err
				}
				return d.exit(cfg)
			}
			if err := d.journal.reopen(); err != nil {
				d.log.Warn("reopen the rejects log", "err", err)
			}
			d.notify(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", api.MonotonicNow()/1000))
			next, nextOpts, nm, err := d.reload(*call, cfg)
			d.notify("READY=1\nSTATUS=enforcing " + d.cfgFileInForce())
			if err != nil {
				if call.reply != nil {
					call.reply <- err
				}
				continue // the loop and the configuration in force stay
			}
			if next.Metrics.Listen != cfg.Metrics.Listen {
				var merr error
				if metrics, merr = d.moveMetrics(metrics, next.Metrics.Listen); merr != nil {
					d.log.Error("metrics address of the new configuration; the old one stays", "err", merr)
					err = fmt.Errorf("%s is in force, but not its metrics address: %w (metrics stay on %s)", call.file, merr, metrics.listen)
					next.Metrics.Listen = cfg.Metrics.Listen
				}
			}
			cfg, opts = next, nextOpts
			d.listeners.configure(WatchedPorts(cfg))
			// Each job's error is its room's, and all of them the reload's:
			// status keeps them until a reload puts everything right.
			var jobErrs []error
			if err != nil {
				jobErrs = append(jobErrs, err)
			}
			if serr := d.swapSIP(ctx, cfg); serr != nil {
				d.log.Error("SIP jobs of the new configuration", "err", serr)
				jobErrs = append(jobErrs, fmt.Errorf("%s is in force, but not all its SIP jobs run: %w", call.file, serr))
			}
			if ferr := d.fleet.configure(ctx, cfg, opts.Policy); ferr != nil {
				d.log.Error("fleet of the new configuration", "err", ferr)
				jobErrs = append(jobErrs, fmt.Errorf("%s is in force, but its fleet leases are not renewed: %w", call.file, ferr))
			}
			err = errors.Join(jobErrs...)
			if err != nil {
				d.mu.Lock()
				if d.status.LastError != "" { // the readers' group's, of reload
					d.status.LastError += "\n"
				}
				d.status.LastError += err.Error()
				d.mu.Unlock()
			}
			if call.reply != nil {
				call.reply <- err
			}
			if nm != nil { // the measuring changed: a new loop
				cancel()
				<-done
				m.close()
				m, restart = nm, true
				d.loopEvery.Store(int64(m.loop.Interval))
			}
		}
	}
}

func (d *Daemon) cfgFileInForce() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status.Config
}
