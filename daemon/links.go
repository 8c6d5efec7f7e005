package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsCheckEvery is how often a daemon run with --netns looks whether its
// namespace's name still names the namespace it follows.
const netnsCheckEvery = time.Second

// linkEvent is an interface that appeared or changed, or is gone.
type linkEvent struct {
	name string
	gone bool
}

// watchLinks reports every interface that appears, changes or goes in the
// daemon's network namespace, until ctx ends: an interface of the
// configuration that comes back gets the filter again at once. A
// namespace deleted and made again under the same name is a new one,
// whose interfaces the old subscription never sees; so with --netns the
// daemon checks the name every netnsCheckEvery, follows the new namespace
// and reports every interface in it.
func (d *Daemon) watchLinks(ctx context.Context) (<-chan linkEvent, error) {
	events := make(chan linkEvent, 16)
	stop, id, err := d.subscribeLinks(ctx, events)
	if err != nil {
		return nil, err
	}
	if d.cfg.Netns == "" {
		return events, nil
	}
	go every(ctx, netnsCheckEvery, func() {
		now, err := netnsID(d.cfg.Netns)
		if err != nil || now == id {
			return // gone for now, or the same: the subscription stands
		}
		nstop, nid, err := d.subscribeLinks(ctx, events)
		if err != nil {
			d.log.Warn("follow the network namespace made again", "netns", d.cfg.Netns, "err", err)
			return
		}
		close(stop)
		stop, id = nstop, nid
		d.log.Info("network namespace made again; following the new one", "netns", d.cfg.Netns)
		d.reportLinks(ctx, events)
	})
	return events, nil
}

// netnsID names the namespace a name stands for now.
func netnsID(name string) (string, error) {
	h, err := netns.GetFromName(name)
	if err != nil {
		return "", err
	}
	defer h.Close()
	return h.UniqueId(), nil
}

// subscribeLinks subscribes to the link events of the daemon's namespace
// as it is now and forwards them to events until ctx ends or stop is
// closed; id names the namespace.
func (d *Daemon) subscribeLinks(ctx context.Context, events chan<- linkEvent) (stop chan struct{}, id string, err error) {
	opts := netlink.LinkSubscribeOptions{
		ErrorCallback: func(err error) {
			if ctx.Err() == nil { // ending the subscription fails its read
				d.log.Warn("link events", "err", err)
			}
		},
	}
	if d.cfg.Netns != "" {
		h, err := netns.GetFromName(d.cfg.Netns)
		if err != nil {
			return nil, "", fmt.Errorf("network namespace %q: %w", d.cfg.Netns, err)
		}
		defer h.Close() // the subscription holds its own socket in there
		opts.Namespace, id = &h, h.UniqueId()
	}
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	if err := netlink.LinkSubscribeWithOptions(updates, done, opts); err != nil {
		return nil, "", fmt.Errorf("subscribe to link events: %w", err)
	}
	stop = make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case u, ok := <-updates:
				if !ok {
					return
				}
				if u.Header.Type != unix.RTM_NEWLINK && u.Header.Type != unix.RTM_DELLINK {
					continue
				}
				select {
				case events <- linkEvent{name: u.Attrs().Name, gone: u.Header.Type == unix.RTM_DELLINK}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return stop, id, nil
}

// reportLinks sends an event for every interface the daemon's namespace
// has now: those made before the subscription sent none.
func (d *Daemon) reportLinks(ctx context.Context, events chan<- linkEvent) {
	ns, err := netns.GetFromName(d.cfg.Netns)
	if err != nil {
		d.log.Warn("list interfaces", "netns", d.cfg.Netns, "err", err)
		return
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		d.log.Warn("list interfaces", "netns", d.cfg.Netns, "err", err)
		return
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		d.log.Warn("list interfaces", "netns", d.cfg.Netns, "err", err)
		return
	}
	for _, l := range links {
		select {
		case events <- linkEvent{name: l.Attrs().Name}:
		case <-ctx.Done():
			return
		}
	}
}
