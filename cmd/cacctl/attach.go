package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/listeners"
	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/loader"
)

func newAttachCmd(g *globals) *cobra.Command {
	var cfgFile, mode string
	var force bool
	cmd := &cobra.Command{
		Use:               "attach IFACE --config FILE [--mode auto|native|generic|multi]",
		ValidArgsFunction: completeInterfaces(g),
		Short:             "Attach the filter to an interface with the static limits of FILE, and leave it there",
		Args:              exactArgs("IFACE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			iface := args[0]
			cfg, opts, err := daemon.LoadOptions(cfgFile)
			if err != nil {
				return err
			}
			for _, i := range cfg.Interfaces {
				if i.Name == iface {
					opts.Priority = i.Priority
					if mode == "" {
						mode = i.Mode
					}
				}
			}
			if mode == "" {
				mode = "auto"
			}
			a := loader.Attachment{Iface: iface, Netns: g.netns}
			opts.StateDir, opts.Mode, opts.Force = g.stateDir, mode, force
			opts.Notify = func(msg string) { fmt.Fprintln(cmd.ErrOrStderr(), "cacctl: "+msg) }
			others, err := loader.List(g.stateDir)
			if err != nil {
				return err
			}
			got, err := loader.Attach(a, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "attached xdpcac to %s in %s mode\n", a, got)
			warnWithoutDaemon(cmd.ErrOrStderr(), g.stateDir, cfg)
			if len(others) > 0 {
				// One state for all: the file is now in force on every one.
				if _, err := loader.Apply(g.stateDir, opts); err != nil {
					return fmt.Errorf("%s joined the other interfaces, but putting %s in force failed: %w", a, cfgFile, err)
				}
			}
			warnUnwatched(cmd.ErrOrStderr(), g.netns, daemon.WatchedPorts(cfg))
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file (required)")
	cmd.Flags().StringVar(&mode, "mode", "", "XDP mode: auto, native, generic, or multi to share the interface through a libxdp dispatcher (default: the interface's mode in FILE, else auto, which joins a dispatcher already there)")
	cmd.Flags().BoolVar(&force, "force", false, "replace another XDP program attached over netlink")
	cmd.MarkFlagRequired("config")
	return cmd
}

func newApplyCmd(g *globals) *cobra.Command {
	var cfgFile string
	var adopt bool
	cmd := &cobra.Command{
		Use:   "apply --config FILE [--adopt]",
		Short: "Put new limits in force on every attached interface, keeping buckets and counters",
		Long: `apply checks FILE and puts it in force on every attached interface while
traffic flows: buckets, charges and counters are kept. When cacctl run is
running for the state directory, apply hands FILE to it and the daemon
puts it in force and measures for it; a bad file changes nothing either
way. SIGHUP (systemctl reload) goes on reading the file the daemon was
started with, unless --adopt makes FILE the one it reads from now on.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, opts, err := daemon.LoadOptions(cfgFile)
			if err != nil {
				return err
			}
			if err := daemon.CheckInterfaces(cmd.ErrOrStderr(), g.netns, cfg); err != nil {
				return err
			}
			// A running daemon owns the configuration: it puts the file in
			// force and measures for it.
			if c := api.Dial(g.stateDir); c != nil {
				abs, err := filepath.Abs(cfgFile)
				if err != nil {
					return err
				}
				if err := c.Apply(abs, adopt); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "applied %s through the running cacctl run\n", cfgFile)
				if adopt {
					fmt.Fprintf(cmd.OutOrStdout(), "SIGHUP reads %s from now on\n", abs)
				}
				return nil
			}
			if adopt {
				return usagef("--adopt: no cacctl run serves %s, and a reload is the daemon's", g.stateDir)
			}
			done, err := loader.Apply(g.stateDir, opts)
			for _, a := range done {
				fmt.Fprintf(cmd.OutOrStdout(), "applied %s to %s\n", cfgFile, a)
			}
			if err == nil {
				warnWithoutDaemon(cmd.ErrOrStderr(), g.stateDir, cfg)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file (required)")
	cmd.Flags().BoolVar(&adopt, "adopt", false, "make FILE the file the running daemon reads on SIGHUP")
	cmd.MarkFlagRequired("config")
	return cmd
}

func newDetachCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "detach IFACE",
		ValidArgsFunction: completeAttached(g),
		Short:             "Take the filter off an interface and remove its state",
		Args:              exactArgs("IFACE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := loader.Attachment{Iface: args[0], Netns: g.netns}
			if err := loader.Detach(a, g.stateDir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "detached xdpcac from %s\n", a)
			if atts, err := loader.List(g.stateDir); err == nil && len(atts) == 0 {
				daemon.RemoveStaleFiles(g.stateDir)
			}
			return nil
		},
	}
}

func newValidateCmd(g *globals) *cobra.Command {
	var cfgFile string
	cmd := &cobra.Command{
		Use:   "validate FILE | --config FILE",
		Short: "Check a configuration file; every error names its line and key",
		Long: `validate checks FILE as apply would, without changing anything: what it
refuses, apply refuses. It prints the call admission lines the IOS block
comes to, and warns of interfaces this box lacks, which apply and run
refuse when the file names no other: the file may be meant for another box.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usagef("%s takes one file, as FILE or --config FILE (got %d arguments)", cmd.CommandPath(), len(args))
			case len(args) == 1 && cfgFile != "" && args[0] != cfgFile:
				return usagef("%s was given two files, %s and --config %s: give one", cmd.CommandPath(), args[0], cfgFile)
			case len(args) == 0 && cfgFile == "":
				return usagef("%s wants the file to check: cacctl validate FILE", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				cfgFile = args[0]
			}
			cfg, _, err := daemon.LoadOptions(cfgFile)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: valid (%d interfaces, %d class limits, %d customers, %d session agents)\n",
				cfgFile, len(cfg.Interfaces), len(cfg.Classes), len(cfg.Customers), len(cfg.SessionAgents))
			for _, l := range cfg.CallAdmission.Lines() {
				fmt.Fprintf(out, "  %s\n", l)
			}
			if missing, err := daemon.MissingInterfaces(g.netns, cfg); err == nil && len(missing) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: interfaces that do not exist on this box: %s\n", cfgFile, strings.Join(missing, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "configuration file, as apply and run take it")
	return cmd
}

// warnWithoutDaemon says so when cfg needs a daemon and no cacctl run
// serves stateDir: with max-sessions the filter takes sessions and only
// the daemon gives them back (docs/design.md, "Capacity").
func warnWithoutDaemon(w io.Writer, stateDir string, cfg *config.Config) {
	if cfg.HasCapacity() && api.Dial(stateDir) == nil {
		fmt.Fprintf(w, "cacctl: warning: max-sessions is set and no cacctl run serves %s: the filter takes sessions and gives none back until one runs\n", stateDir)
	}
	// Fleet-scope levels spend leases only the daemon renews
	// (docs/design.md, "Fleet"): without one they refuse every call.
	if cfg.HasFleet() && api.Dial(stateDir) == nil {
		fmt.Fprintf(w, "cacctl: warning: scope: fleet is set and no cacctl run serves %s: fleet-scope levels refuse every call until one runs and renews their leases\n", stateDir)
	}
}

// warnUnwatched names the SIP listeners of the namespace ns that a filter
// watching the ports p does not watch; the attach stands all the same
// (docs/design.md, "SIP listeners").
func warnUnwatched(w io.Writer, ns string, p listeners.Watched) {
	found, err := daemon.UnwatchedListeners(ns, p)
	if err != nil {
		fmt.Fprintf(w, "cacctl: warning: cannot list the SIP listeners to check they are watched: %v\n", err)
		return
	}
	for _, u := range found {
		fmt.Fprintf(w, "cacctl: warning: SIP listener %s is not watched: %s\n", u, u.Reason)
	}
}
