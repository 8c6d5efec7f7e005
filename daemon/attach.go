package daemon

import (
	"errors"
	"fmt"

	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
)

// linkEvent attaches an interface of cfg that appeared, or came back.
func (d *Daemon) linkEvent(cfg *config.Config, opts loader.Options, ev linkEvent) {
	for _, i := range cfg.Interfaces {
		if i.Name != ev.name {
			continue
		}
		a := loader.Attachment{Iface: i.Name, Netns: d.cfg.Netns}
		switch {
		case ev.gone:
			d.log.Warn("interface gone; the filter returns with it", "interface", a.String())
		case loader.NeedsAttach(d.cfg.StateDir, a):
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
func (d *Daemon) attachAll(cfg *config.Config, opts loader.Options) (fresh []loader.Attachment, err error) {
	undo := func(err error) ([]loader.Attachment, error) {
		d.undoAttach(fresh)
		return nil, err
	}
	for _, i := range cfg.Interfaces {
		a := loader.Attachment{Iface: i.Name, Netns: d.cfg.Netns}
		before := loader.IsAttached(d.cfg.StateDir, a)
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
	if atts, err := loader.List(d.cfg.StateDir); err != nil || len(atts) == 0 {
		if err != nil {
			return undo(err)
		}
		return nil, nil // nothing attached yet: the first to appear starts with opts
	}
	if _, err := loader.Apply(d.cfg.StateDir, opts); err != nil {
		return undo(err)
	}
	return fresh, nil
}

// undoAttach detaches the attachments a start made (attachAll's fresh),
// so that a start refused leaves the interfaces as it found them.
func (d *Daemon) undoAttach(fresh []loader.Attachment) {
	for _, a := range fresh {
		d.unhold(a)
		if err := loader.Detach(a, d.cfg.StateDir); err != nil {
			d.log.Error("take back an attachment", "interface", a.String(), "err", err)
			continue
		}
		d.log.Info("took back the attachment of a refused start", "interface", a.String())
	}
}

// ensure attaches one interface or takes it over, and holds its link.
func (d *Daemon) ensure(i config.Interface, opts loader.Options) error {
	opts.StateDir, opts.Mode, opts.Force, opts.Priority = d.cfg.StateDir, i.Mode, d.cfg.Force, i.Priority
	a := loader.Attachment{Iface: i.Name, Netns: d.cfg.Netns}
	opts.Notify = func(msg string) { d.log.Warn(msg, "interface", a.String()) }
	if l, ok := d.held[a]; ok && !loader.IsAttached(d.cfg.StateDir, a) {
		// Pins gone under a filter this daemon holds: pin it again rather
		// than attach a second one with fresh state.
		if _, err := loader.Repin(d.cfg.StateDir, a, l); err != nil {
			return fmt.Errorf("the pins of %s are gone: %w", a, err)
		}
	}
	if _, ok := d.held[a]; ok && !loader.NeedsAttach(d.cfg.StateDir, a) {
		// This daemon attached it or took it over, so it runs this
		// version's program: a reload has nothing to check here, and
		// skips loading the program again (half a second of verifier).
		return nil
	}
	if loader.IsAttached(d.cfg.StateDir, a) {
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
func (d *Daemon) exit(cfg *config.Config) error {
	if !d.cfg.DetachOnExit {
		d.log.Info("stopped; the filter stays attached with its last limits", "on_stale", cfg.OnStale, "stale_after", cfg.StaleAfter)
		return nil
	}
	var errs []error
	d.release()
	for _, i := range cfg.Interfaces {
		a := loader.Attachment{Iface: i.Name, Netns: d.cfg.Netns}
		if err := loader.Detach(a, d.cfg.StateDir); err != nil {
			errs = append(errs, err)
			continue
		}
		d.log.Info("detached", "interface", a.String())
	}
	return errors.Join(errs...)
}

// configured names the interfaces of cfg as status names attachments
// (loader.Attachment.Key), for status to tell which are missing.
func (d *Daemon) configured(cfg *config.Config) []string {
	out := make([]string, 0, len(cfg.Interfaces))
	for _, i := range cfg.Interfaces {
		out = append(out, loader.Attachment{Iface: i.Name, Netns: d.cfg.Netns}.Key())
	}
	return out
}
