package loader

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// xdpFlags are the attach flags of a mode: auto (or none) lets the kernel
// choose, the others ask for one.
func xdpFlags(mode string) (link.XDPAttachFlags, error) {
	switch mode {
	case "", "auto", ModeMulti: // multi: the dispatcher's mode, or the kernel's choice
		return 0, nil // the driver's mode where it has one, generic otherwise
	case "native":
		return link.XDPDriverMode, nil
	case "generic":
		return link.XDPGenericMode, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want auto, native, generic or multi)", mode)
}

// attachModeName names an IFLA_XDP_ATTACHED value (kernel ABI): the mode
// the kernel chose.
func attachModeName(m uint32) string {
	switch m {
	case 1:
		return "native"
	case 2:
		return "generic"
	case 3:
		return "offload"
	}
	return "unknown"
}

// attachXDP attaches prog to the interface nl of a in the mode o asks
// for. In auto mode a driver that refuses the program for the interface's
// MTU (veth, and others, refuse a program without XDP frags support on an
// MTU larger than a page can hold: ERANGE) gets it in generic mode
// instead, and o.Notify says so: a jumbo-frame interface is filtered,
// more slowly, rather than not at all.
func attachXDP(a Attachment, o Options, nl netlink.Link, prog *ebpf.Program) (link.Link, error) {
	flags, err := xdpFlags(o.Mode)
	if err != nil {
		return nil, err
	}
	attach := func(flags link.XDPAttachFlags) (link.Link, error) {
		var l link.Link
		err := inNetns(a.Netns, func() error {
			var err error
			l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: nl.Attrs().Index, Flags: flags})
			return err
		})
		return l, err
	}
	l, err := attach(flags)
	if err != nil && flags == 0 && errors.Is(err, unix.ERANGE) {
		native := err
		if l, err = attach(link.XDPGenericMode); err == nil {
			if o.Notify != nil {
				o.Notify(fmt.Sprintf("native XDP refused %s at its MTU of %d (%v): attached in generic (skb) mode, which costs more per packet; "+
					"lower the MTU to use native mode, or set mode: generic to say so", a, nl.Attrs().MTU, native))
			}
			return l, nil
		}
		err = errors.Join(native, fmt.Errorf("generic mode: %w", err))
	}
	if err != nil {
		return nil, fmt.Errorf("attach XDP to %s in %s mode: %w", a, modeOrAuto(o.Mode), err)
	}
	return l, nil
}

func modeOrAuto(m string) string {
	if m == "" {
		return "auto"
	}
	return m
}
