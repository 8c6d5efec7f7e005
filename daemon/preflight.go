package daemon

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
)

// preflight makes, before anything is attached or put in force, the checks
// of what a configuration needs of the machine once it is: the raw socket
// its 503s go out of (CAP_NET_RAW), and an address of each realm its
// session agents are pinged from. A file that fails one is refused with
// the interfaces as they were (docs/design.md, "The daemon's life"),
// rather than attached under limits whose answers no daemon could send.
func (d *Daemon) preflight(cfg *config.Config) error {
	if rejectsWanted(cfg) || egressWanted(cfg) {
		raw, err := d.openRaw()
		if err != nil {
			what := "answer refused SIP requests (action: reject)"
			if !rejectsWanted(cfg) {
				what = "answer INVITEs refused at egress on session agents' behalf"
			}
			return fmt.Errorf("%s: %s: %w", d.cfg.File, what, err)
		}
		raw.Close()
		wire, err := d.openWire()
		if err != nil {
			return fmt.Errorf("%s: answer refused SIP requests (action: reject): %w", d.cfg.File, err)
		}
		wire.Close()
	}
	bound := map[string]bool{}
	for _, ag := range cfg.SessionAgents {
		for _, name := range realmsOf(ag) {
			if bound[name] {
				continue
			}
			bound[name] = true
			if err := d.canBind(realmAddress(cfg, name)); err != nil {
				return fmt.Errorf("%s: session agent %s: pings from realm %s: %w", d.cfg.File, ag.Name, name, err)
			}
		}
	}
	return nil
}

// rejectsWanted says whether some class answers what it refuses.
func rejectsWanted(cfg *config.Config) bool {
	for _, cl := range cfg.Classes {
		if cl.Reject {
			return true
		}
	}
	return false
}

// realmAddress is the address of the realm named name ("" none: the
// configuration's checks name realms that exist).
func realmAddress(cfg *config.Config, name string) netip.Addr {
	for _, r := range cfg.Realms {
		if r.Name == name {
			return r.Address
		}
	}
	return netip.Addr{}
}

// canBind binds a UDP socket to addr in the daemon's namespace, as a
// pinger will, and closes it.
func (d *Daemon) canBind(addr netip.Addr) error {
	if !addr.IsValid() {
		return nil
	}
	return loader.InNetns(d.cfg.Netns, func() error {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		if err != nil {
			return fmt.Errorf("bind %s: %w", addr, err)
		}
		return c.Close()
	})
}

// closeListener closes l, if any.
func closeListener(l net.Listener) {
	if l != nil {
		l.Close()
	}
}
