package main

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// linkEvent is an interface that appeared or changed, or is gone.
type linkEvent struct {
	name string
	gone bool
}

// watchLinks reports every interface that appears, changes or goes in the
// daemon's network namespace, until ctx ends: an interface of the
// configuration that comes back gets the filter again at once.
func (d *daemon) watchLinks(ctx context.Context) (<-chan linkEvent, error) {
	opts := netlink.LinkSubscribeOptions{
		ErrorCallback: func(err error) {
			if ctx.Err() == nil { // ending the subscription fails its read
				d.log.Warn("link events", "err", err)
			}
		},
	}
	if d.g.netns != "" {
		h, err := netns.GetFromName(d.g.netns)
		if err != nil {
			return nil, fmt.Errorf("network namespace %q: %w", d.g.netns, err)
		}
		defer h.Close() // the subscription holds its own socket in there
		opts.Namespace = &h
	}
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	if err := netlink.LinkSubscribeWithOptions(updates, done, opts); err != nil {
		return nil, fmt.Errorf("subscribe to link events: %w", err)
	}
	events := make(chan linkEvent, 16)
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
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
	return events, nil
}
