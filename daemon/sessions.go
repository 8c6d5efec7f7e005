package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/sessions"
	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// sessionSweep is how often the keeper learns the dialogs the fast path
// entered and ends those whose time is over.
const sessionSweep = time.Second

// sessionKeeper gives back the sessions of the dialogs that end
// (docs/design.md, "Capacity"). It outlives reloads: the dialogs up
// across one keep what they hold.
type sessionKeeper struct {
	log  *slog.Logger
	room *room

	// pinned are the shared maps, opened once at start; sm their
	// dialogs and session counts.
	pinned *loader.Pinned
	sm     maps.SessionMaps
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	table    *sessions.Table
	capacity bool // some limit of the configuration in force has max-sessions
	// started is when the keeper began to read the dialogs' messages:
	// of a dialog that took its sessions before, some went by unseen.
	started time.Time
}

func newSessionKeeper(log *slog.Logger) *sessionKeeper {
	return &sessionKeeper{log: log, room: newRoom("sessions"), table: sessions.New(64*500*time.Millisecond, 12*time.Hour), started: time.Now()}
}

// start opens the shared maps and sweeps them once a second until ctx
// ends or stop. The keeper is no other job's: a reload whose agents or
// answerer fail still has the dialogs' sessions given back.
func (k *sessionKeeper) start(ctx context.Context, stateDir string) error {
	p, err := loader.OpenShared(stateDir)
	if err != nil {
		k.room.fail(err)
		return fmt.Errorf("capacity: %w", err)
	}
	k.pinned, k.sm = p, maps.SessionMapsOf(&p.XdpMaps)
	ctx, k.cancel = context.WithCancel(ctx)
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		every(ctx, sessionSweep, func() { k.sweep(time.Now()) })
	}()
	return nil
}

// stop ends the sweeps and closes the maps.
func (k *sessionKeeper) stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	k.wg.Wait()
	k.pinned.Close()
	k.room.off()
}

// configure takes the timers of cfg: Timer B from its T1, and its
// session expiry.
func (k *sessionKeeper) configure(cfg *config.Config) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.table.SetTimes(64*cfg.SIPT1, cfg.SessionExpiry)
	k.capacity = cfg.HasCapacity()
	switch {
	case !k.capacity || !k.sm.Whole():
		k.room.off() // nothing to give back, or maps of a version without capacity
	case k.room.job().State == api.JobOff:
		k.room.running() // started; the sweeps say if it fails
	}
}

// seen applies a message of a dialog that holds sessions, as the fast
// path handed it up, and gives back what a dialog it ends held.
func (k *sessionKeeper) seen(ev maps.SIPEvent) {
	sm := k.sm
	m, err := sipd.MessageOf(ev.Message)
	if err != nil {
		return
	}
	m.FromServer = ev.Sent // the egress program's
	m.Peer = ev.Src.Addr().Unmap()
	if m.FromServer {
		m.Peer = ev.Dst.Addr().Unmap()
	}
	id := ev.CallID
	if id == 0 || !sm.Whole() {
		return
	}
	now := time.Now()
	k.mu.Lock()
	if !k.table.Known(id) { // entered since the last sweep
		if h, ok := maps.LookupSession(sm.Sessions, id); ok {
			k.enter(id, h, now)
		}
	}
	defer k.mu.Unlock()
	if d, ended := k.table.Seen(id, m, now); ended {
		k.giveBack(sm, id, d, "ended")
	}
}

// sweep, once a second (sessionSweep), learns the dialogs the fast path
// entered and gives back what those whose time is over held.
func (k *sessionKeeper) sweep(now time.Time) {
	sm := k.sm
	if !sm.Whole() { // an attachment of a version without capacity
		return
	}
	// The table is read without the lock: the event reader, which
	// answers refusals too, must not wait on a walk of it.
	held, err := maps.ReadSessions(sm.Sessions)
	if err != nil {
		k.log.Warn("capacity: read the dialogs that hold sessions", "err", err)
		k.room.fail(fmt.Errorf("read the dialogs that hold sessions: %w", err))
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.capacity {
		k.room.running()
	}
	k.learn(held, now)
	for id, d := range k.table.Expired(now) {
		k.giveBack(sm, id, d, "expired")
	}
}

// learn enters in the table every dialog of held, the fast path's, it
// does not hold; mu is held. A dialog the table holds that the fast path
// no longer does (an INVITE a later level refused gave its sessions
// back) is forgotten, unless it was entered since held was read.
func (k *sessionKeeper) learn(held map[uint64]maps.HeldSession, now time.Time) {
	for id, h := range held {
		k.enter(id, h, now)
	}
	for _, id := range k.table.IDs() {
		if _, ok := held[id]; !ok && k.table.Entered(id).Before(now) {
			k.table.Forget(id)
		}
	}
}

// enter enters a dialog of the fast path's, with the time it took its
// sessions: adopted, as answered, if that was before the keeper started
// reading the messages; mu is held.
func (k *sessionKeeper) enter(id uint64, h maps.HeldSession, now time.Time) {
	if taken := k.takenAt(h, now); taken.Before(k.started) {
		k.table.Adopt(id, taken, now, h.Limits, outbound(h))
	} else {
		k.table.Learn(id, taken, now, h.Limits, outbound(h))
	}
}

// outbound reports whether h is the part of a dialog toward a session
// agent: the egress program enters it with the agent's limit alone.
func outbound(h maps.HeldSession) bool {
	return len(h.Limits) > 0 && maps.IsAgentSessions(h.Limits[0])
}

// takenAt is the wall time of the fast path's monotonic stamp of h.
func (k *sessionKeeper) takenAt(h maps.HeldSession, now time.Time) time.Time {
	if mono := control.MonotonicCoarse(); h.TakenNS <= mono {
		return now.Add(-time.Duration(mono - h.TakenNS))
	}
	return now
}

// giveBack gives back what dialog id held; mu is held, so that two
// give-backs of one limit never race on its count.
func (k *sessionKeeper) giveBack(sm maps.SessionMaps, id uint64, d sessions.Dialog, why string) {
	if err := maps.GiveBack(sm, id); err != nil {
		k.log.Warn("capacity: give back a dialog's sessions", "err", err)
		return
	}
	k.log.Debug("capacity: sessions given back", "why", why, "state", d.State.String(), "limits", d.Limits)
}
