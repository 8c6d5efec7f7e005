package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// denyWatch is the room "access" (docs/design.md, "Auto-deny"): once a
// second it reads the deny table, records once each source it has not
// seen denied, and takes out and records once each past its until, or
// every one while auto-deny is off. A restarted daemon has seen none:
// it records the sources still denied once more.
type denyWatch struct {
	log    *slog.Logger
	room   *room
	pins   loader.Pins
	record func([]api.RejectLine) // the journal's
	// mono is the fast path's clock, wall the wall clock read with it.
	mono func() uint64
	wall func() time.Time

	mu   sync.Mutex
	seen map[bpf.XdpCacDenyKey]maps.Denied
	ev   evictions
}

func newDenyWatch(log *slog.Logger, pins loader.Pins, record func([]api.RejectLine)) *denyWatch {
	return &denyWatch{log: log, room: newRoom("access"), pins: pins, record: record,
		mono: control.MonotonicCoarse, wall: time.Now, seen: map[bpf.XdpCacDenyKey]maps.Denied{}}
}

// run steps once a second until ctx ends.
func (w *denyWatch) run(ctx context.Context) {
	every(ctx, time.Second, w.step)
}

// step reads the shared maps of the first attachment: the deny table is
// one for the box. The sources each attachment added to it are read
// first, for the count of evictions.
func (w *denyWatch) step() {
	added := map[string]uint64{}
	aerr := w.pins.Each(func(p *loader.Pinned) error {
		s, err := maps.ReadStats(p.Stats)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Attachment, err)
		}
		added[p.Attachment.Key()] = s.DenyAdded
		return nil
	})
	if aerr != nil {
		added = nil // no balance this time: the next covers two seconds
	}
	err := w.shared(func(p *loader.Pinned) error {
		if p.Denied == nil || p.AccessSettings == nil {
			w.room.off() // a version without a deny table
			return nil
		}
		return w.sweep(p.Denied, p.DenyPending, p.AccessSettings, p.PolicySlot, added)
	})
	if errors.Is(err, loader.ErrNothingAttached) {
		return
	}
	if err != nil {
		w.log.Warn("access: read the deny table", "err", err)
		w.room.fail(err)
	}
}

// evicted is the count of evictions, and whether a sweep has read a deny
// table to count them.
func (w *denyWatch) evicted() (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ev.total, w.ev.table != 0
}

// sweep is one read of the deny table, with the frames pending of it
// (pending); added, the deny_added of each attachment read just before,
// balances it for the count of evictions (nil when it could not be read).
func (w *denyWatch) sweep(denied, pending, settings, slot *ebpf.Map, added map[string]uint64) error {
	on, err := maps.AutoDenyOn(slot)
	if err != nil {
		return err
	}
	as, err := maps.ReadAccessSettings(settings)
	if err != nil {
		return err
	}
	// Locked before the read, so that a clear falls wholly before or
	// after it.
	w.mu.Lock()
	defer w.mu.Unlock()
	ds, err := maps.ReadDenied(denied, pending, as.Ipv6Prefix)
	if err != nil {
		return err
	}
	now, wall := w.mono(), w.wall()
	var lines []api.RejectLine
	var gone []bpf.XdpCacDenyKey
	live := make(map[bpf.XdpCacDenyKey]bool, len(ds)) // every source read: true for those still denied
	for _, d := range ds {
		live[d.Key] = false
		old, known := w.seen[d.Key]
		if known && old.SinceNS != d.SinceNS { // released, and denied again since
			lines = append(lines, deniedLine(old, api.EventReleased, api.ReleasedExpired, wall, now))
			known = false
			w.ev.overwrote()
		}
		if !known {
			lines = append(lines, deniedLine(d, api.EventDenied, "", wall, now))
		}
		switch {
		case !on:
			lines = append(lines, deniedLine(d, api.EventReleased, api.ReleasedAutoDenyOff, wall, now))
			gone = append(gone, d.Key)
		case now >= d.UntilNS:
			lines = append(lines, deniedLine(d, api.EventReleased, api.ReleasedExpired, wall, now))
			gone = append(gone, d.Key)
		default:
			w.seen[d.Key], live[d.Key] = d, true
		}
	}
	// A source seen denied that is no longer in the table at all was
	// evicted (or evicted after its until passed): its release is
	// recorded all the same.
	for k, old := range w.seen {
		stays, read := live[k]
		if stays {
			continue
		}
		delete(w.seen, k)
		if !read {
			why := api.ReleasedEvicted
			if now >= old.UntilNS {
				why = api.ReleasedExpired
			}
			lines = append(lines, deniedLine(old, api.EventReleased, why, wall, now))
		}
	}
	if added != nil {
		info, err := denied.Info()
		if err != nil {
			return fmt.Errorf("deny table: %w", err)
		}
		id, _ := info.ID()
		w.ev.balance(id, added, len(ds))
	}
	w.ev.took(len(gone))
	if on {
		w.room.running()
	} else {
		w.room.off()
	}
	derr := maps.DeleteDenied(denied, gone)
	if len(lines) > 0 {
		w.record(lines)
	}
	if derr != nil {
		return fmt.Errorf("release sources past their until: %w", derr)
	}
	return nil
}

// deniedLine is the record of an event of a source of the deny table,
// at now of the fast path's clock (wall on the wall clock).
func deniedLine(d maps.Denied, event, why string, wall time.Time, now uint64) api.RejectLine {
	at := func(ns uint64) time.Time { return wall.Add(-time.Duration(now - ns)) }
	l := api.RejectLine{Time: at(d.SinceNS), First: at(d.SinceNS), Source: d.Source, Reason: cac.ReasonDenied.String(),
		Event: event, Why: why, Since: at(d.SinceNS), Until: at(d.UntilNS), Refusals: d.Refusals}
	if event == api.EventReleased {
		l.Time, l.Count, l.Frames = wall, d.Frames, d.Frames
	}
	return l
}

// shared calls fn with the shared maps of the first attachment.
func (w *denyWatch) shared(fn func(p *loader.Pinned) error) error {
	done := false
	err := w.pins.Each(func(p *loader.Pinned) error {
		if done {
			return nil
		}
		done = true
		return fn(p)
	})
	if err == nil && !done {
		return loader.ErrNothingAttached
	}
	return err
}

// list is GET /v1/denied.
func (w *denyWatch) list() ([]api.DeniedSource, error) {
	var out []api.DeniedSource
	err := w.shared(func(p *loader.Pinned) error {
		var err error
		out, _, err = DeniedOf(p, time.Now(), api.MonotonicNow())
		return err
	})
	if out == nil {
		out = []api.DeniedSource{}
	}
	return out, err
}

// clear is POST /v1/denied/clear: the sources t matches are taken out,
// each recorded as released ("cleared").
func (w *denyWatch) clear(t api.DenyTarget) ([]api.DeniedSource, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := []api.DeniedSource{}
	err := w.shared(func(p *loader.Pinned) error {
		gone, err := ClearDenied(p, t, time.Now(), api.MonotonicNow())
		out = append(out, gone...)
		return err
	})
	w.ev.took(len(out))
	lines := make([]api.RejectLine, 0, len(out))
	for _, d := range out {
		lines = append(lines, api.RejectLine{Time: time.Now(), First: d.Since, Source: d.Source, Reason: cac.ReasonDenied.String(),
			Count: d.Frames, Event: api.EventReleased, Why: api.ReleasedCleared, Since: d.Since, Until: d.Until,
			Refusals: d.Refusals, Frames: d.Frames})
	}
	for k, s := range w.seen {
		if t.Matches(s.Source) {
			delete(w.seen, k)
		}
	}
	if len(lines) > 0 {
		w.record(lines)
	}
	return out, err
}

// deniedRoutes serves the deny table on the API.
func (d *Daemon) deniedRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+api.PathDenied, func(rw http.ResponseWriter, r *http.Request) {
		out, err := d.access.list()
		if err != nil {
			writeJSON(rw, http.StatusInternalServerError, api.Error{Error: err.Error()})
			return
		}
		writeJSON(rw, http.StatusOK, out)
	})
	mux.HandleFunc("POST "+api.PathDeniedClear, func(rw http.ResponseWriter, r *http.Request) {
		var req api.ClearDeniedRequest
		err := json.NewDecoder(io.LimitReader(r.Body, 1<<12)).Decode(&req)
		t, terr := api.ParseDenyTarget(req.Target)
		if err != nil || terr != nil {
			writeJSON(rw, http.StatusBadRequest, api.Error{Error: fmt.Sprintf(`want {"target": ADDR|PREFIX|MAC|"all"}: %v`, errors.Join(err, terr))})
			return
		}
		out, err := d.access.clear(t)
		if err != nil {
			writeJSON(rw, http.StatusInternalServerError, api.Error{Error: err.Error()})
			return
		}
		writeJSON(rw, http.StatusOK, out)
	})
}
