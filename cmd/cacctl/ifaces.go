package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
)

// missingInterfaces are the interfaces of cfg that do not exist in the
// named network namespace (empty: this one).
func missingInterfaces(netns string, cfg *config.Config) ([]string, error) {
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

// checkInterfaces refuses a file none of whose interfaces exist, and
// warns on w of those that do not. A file that names only interfaces
// this box lacks (a typo, the file of another box) would otherwise replace
// the limits in force on the interfaces that are attached.
func checkInterfaces(w io.Writer, netns string, cfg *config.Config) error {
	missing, err := missingInterfaces(netns, cfg)
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

// checkInterfaces is checkInterfaces for the daemon, in its namespace,
// with the warning in its log. An interface missing at start is still
// attached when it appears; a file that names none that exist is refused,
// at start as at a reload.
func (d *daemon) checkInterfaces(cfg *config.Config) error {
	var warn strings.Builder
	err := checkInterfaces(&warn, d.g.netns, cfg)
	if warn.Len() > 0 {
		d.log.Warn(strings.TrimSpace(warn.String()))
	}
	return err
}
