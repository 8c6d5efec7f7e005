package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// MissingInterfaces are the interfaces of cfg that do not exist in the
// named network namespace (empty: this one).
func MissingInterfaces(netns string, cfg *config.Config) ([]string, error) {
	var missing []string
	err := loader.InNetns(netns, func() error {
		for _, i := range cfg.Interfaces {
			_, err := netlink.LinkByName(i.Name)
			var nf netlink.LinkNotFoundError
			switch {
			case errors.As(err, &nf):
				missing = append(missing, i.Name)
			case err != nil:
				return fmt.Errorf("look up interface %s: %w", i.Name, err)
			}
		}
		return nil
	})
	return missing, err
}

// CheckInterfaces refuses a file none of whose interfaces exist, and
// warns on w of those that do not. A file that names only interfaces
// this box lacks (a typo, the file of another box) would otherwise replace
// the limits in force on the interfaces that are attached.
func CheckInterfaces(w io.Writer, netns string, cfg *config.Config) error {
	missing, err := MissingInterfaces(netns, cfg)
	if err != nil {
		return err
	}
	where := ""
	if netns != "" {
		where = " in network namespace " + netns
	}
	if len(cfg.Interfaces) > 0 && len(missing) == len(cfg.Interfaces) {
		return fmt.Errorf("%s: none of its interfaces exist%s (%s): nothing changed", cfg.File, where, strings.Join(missing, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "warning: %s: interfaces that do not exist%s: %s\n", cfg.File, where, strings.Join(missing, ", "))
	}
	return nil
}

// checkInterfaces is CheckInterfaces for the daemon, in its namespace,
// with the warning in its log. An interface missing at start is still
// attached when it appears; a file that names none that exist is refused,
// at start as at a reload.
func (d *Daemon) checkInterfaces(cfg *config.Config) error {
	var warn strings.Builder
	err := CheckInterfaces(&warn, d.cfg.Netns, cfg)
	if warn.Len() > 0 {
		d.log.Warn(strings.TrimSpace(warn.String()))
	}
	return err
}

// LoadOptions reads a config file into what the loader writes to the maps.
func LoadOptions(cfgFile string) (*config.Config, loader.Options, error) {
	cfg, err := config.Load(cfgFile)
	if err != nil {
		return nil, loader.Options{}, err
	}
	pol, err := policy.Of(cfg)
	if err != nil {
		return nil, loader.Options{}, fmt.Errorf("%s: %w", cfgFile, err)
	}
	settings := maps.Settings{MalformedDrop: cfg.MalformedDrop}
	for c, cl := range cfg.Classes {
		settings.Reject[c] = cl.Reject
	}
	var auto maps.AutoDeny
	var denyTable uint32
	if ad := cfg.Access.AutoDeny; ad != nil {
		auto = maps.AutoDeny{Refused: ad.Refused, Within: ad.Within, DenyFor: ad.DenyFor, IPv6Prefix: uint8(cfg.AutoDenyIPv6Prefix())}
		denyTable = ad.Table
	}
	return cfg, loader.Options{
		Access: maps.Access{Deny: cfg.Access.Deny, Allow: cfg.Access.Allow,
			DenyMAC: cfg.Access.DenyMAC, AllowMAC: cfg.Access.AllowMAC},
		AutoDeny:    auto,
		DenyTable:   denyTable,
		Settings:    settings,
		L2TPPorts:   cfg.Ports.L2TP,
		SIPPorts:    cfg.Ports.SIP,
		SIPTCPPorts: cfg.Ports.SIPTCP,
		Policy:      pol,
		SourceTable: cfg.SourceTable,
		DialogTable: cfg.DialogTable,
		AgentAddrs:  literalAgentAddrs(cfg),
	}, nil
}

// literalAgentAddrs are the session agents whose hostname is an address;
// the daemon resolves the others.
func literalAgentAddrs(cfg *config.Config) map[netip.Addr]uint32 {
	out := map[netip.Addr]uint32{}
	for i, a := range cfg.SessionAgents {
		if ip, err := netip.ParseAddr(a.Hostname); err == nil {
			out[netip.AddrFrom16(ip.As16())] = uint32(i)
		}
	}
	return out
}
