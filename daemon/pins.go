package daemon

import (
	"errors"
	"slices"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/loader"
)

// pinCheckEvery is how often the daemon looks for the pins of the
// attachments it holds.
const pinCheckEvery = time.Second

// keepPins pins again every held attachment whose pins are gone: its
// bpffs was unmounted, or its directory removed. The filter never came
// off (the daemon holds its link), but the CLI and a restarted daemon
// look for the state in the pins. A failure is logged once until it
// changes or the pins are back.
func (d *Daemon) keepPins() {
	for a, l := range d.held {
		pinned, err := loader.Repin(d.cfg.StateDir, a, l)
		was, failing := d.pinErrs[a]
		switch {
		case errors.Is(err, loader.ErrDetached):
			// `cacctl detach` took it off, or the interface went: the
			// pins went on purpose, or come back with the interface.
			d.unhold(a)
			delete(d.pinErrs, a)
			d.log.Info("detached while the daemon runs; its state is not pinned again", "interface", a.String())
		case err == nil:
			delete(d.pinErrs, a)
			if pinned {
				d.log.Info("pinned again", "interface", a.String(), "state_dir", d.cfg.StateDir)
			}
		case err != nil && (!failing || was != err.Error()):
			if d.pinErrs == nil {
				d.pinErrs = map[loader.Attachment]string{}
			}
			d.pinErrs[a] = err.Error()
			d.log.Warn("the pins are gone and cannot be made again yet; the filter stays on",
				"interface", a.String(), "err", err)
		}
	}
	lost := []string{}
	for a := range d.pinErrs {
		lost = append(lost, a.Key())
	}
	slices.Sort(lost)
	d.mu.Lock()
	d.status.PinsLost = lost // status says degraded while any is
	d.mu.Unlock()
}

// hold keeps the link of a open (the one pinned now: a reattach pins a
// new one).
func (d *Daemon) hold(a loader.Attachment) {
	l, err := loader.HoldLink(d.cfg.StateDir, a)
	if err != nil {
		d.log.Warn("hold the link", "interface", a.String(), "err", err)
		return
	}
	if d.held == nil {
		d.held = map[loader.Attachment]link.Link{}
	}
	if old, ok := d.held[a]; ok {
		old.Close()
	}
	d.held[a] = l
}

// unhold closes the held link of a, before it is detached: a held link
// would keep the filter on.
func (d *Daemon) unhold(a loader.Attachment) {
	if l, ok := d.held[a]; ok {
		l.Close()
		delete(d.held, a)
	}
}

// release closes the held links; pinned links stay attached.
func (d *Daemon) release() {
	for a, l := range d.held {
		l.Close()
		delete(d.held, a)
	}
}
