package loader

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// InNetns runs fn on an OS thread that has entered the named network
// namespace (empty: this one): sockets and netlink handles fn opens stay
// bound to that namespace afterwards.
func InNetns(name string, fn func() error) error { return inNetns(name, fn) }

// inNetns runs fn on an OS thread that has entered the named network
// namespace; an empty name means this one. The kernel resolves interface
// indexes in the caller's namespace, so attaching must happen in there,
// while bpffs pins stay where they are: mounts are not per network namespace.
func inNetns(name string, fn func() error) error {
	if name == "" {
		return fn()
	}
	target, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("network namespace %q: %w", name, err)
	}
	defer target.Close()

	errc := make(chan error, 1)
	go func() {
		// The thread stays locked unless it is back in its own namespace:
		// Go ends a locked thread whose goroutine returns, so a thread
		// left in the wrong namespace never serves anything else.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			errc <- fmt.Errorf("enter network namespace %q: %w", name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			ferr = errors.Join(ferr, fmt.Errorf("leave network namespace %q: %w", name, err))
		} else {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// linkByName finds an interface in the named network namespace.
func linkByName(ns, name string) (netlink.Link, error) {
	var l netlink.Link
	err := inNetns(ns, func() error {
		var err error
		l, err = netlink.LinkByName(name)
		return err
	})
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			if ns != "" {
				return nil, missingInterface(fmt.Sprintf("interface %s does not exist in network namespace %s", name, ns))
			}
			return nil, missingInterface(fmt.Sprintf("interface %s does not exist", name))
		}
		return nil, fmt.Errorf("look up interface %s: %w", name, err)
	}
	return l, nil
}

// ErrNoInterface is what errors about an interface that does not exist
// are (errors.Is), so that the daemon can wait for one.
var ErrNoInterface = errors.New("interface does not exist")

type missingInterface string

func (e missingInterface) Error() string        { return string(e) }
func (e missingInterface) Is(target error) bool { return target == ErrNoInterface }

// Exists says whether the interface of a exists now; false when it
// cannot be looked up at all.
func Exists(a Attachment) bool {
	_, err := linkByName(a.Netns, a.Iface)
	return err == nil
}
