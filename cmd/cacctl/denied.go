package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/loader"
)

// newShowDeniedCmd is `show denied`: the sources of the deny table
// (docs/design.md, "Auto-deny").
func newShowDeniedCmd(g *globals) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "denied [-o text|json]",
		Short: "Sources the filter auto-denied: since, until, the refusals that earned it, frames dropped since",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			ds, err := readDenied(g.stateDir)
			if err != nil {
				return err
			}
			slices.SortFunc(ds, func(a, b api.DeniedSource) int { return b.Since.Compare(a.Since) })
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), ds)
			}
			return writeDeniedText(cmd.OutOrStdout(), ds)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

func writeDeniedText(w io.Writer, ds []api.DeniedSource) error {
	if len(ds) == 0 {
		fmt.Fprintln(w, "no denied sources")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tHOW\tSINCE\tUNTIL\tREFUSALS\tFRAMES")
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", d.Source, d.How, d.Since.Format("2006-01-02 15:04:05.000"),
			d.Until.Format("2006-01-02 15:04:05.000"), d.Refusals, d.Frames)
	}
	return tw.Flush()
}

// newClearDeniedCmd is `clear denied ADDR|PREFIX|MAC|all`: releases
// sources of the deny table.
func newClearDeniedCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "denied ADDR|PREFIX|MAC|all",
		Short: "Release auto-denied sources: an address, every source inside a prefix, a MAC, or all",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes one argument: an address, a prefix, a MAC or all (got %d)", cmd.CommandPath(), len(args))
			}
			if _, err := api.ParseDenyTarget(args[0]); err != nil {
				return usageError{err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			gone, err := clearDenied(g.stateDir, args[0])
			for _, d := range gone {
				fmt.Fprintf(cmd.OutOrStdout(), "released %s\n", d.Source)
			}
			if err == nil && len(gone) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no denied source matches %s\n", args[0])
			}
			return err
		},
	}
}

// readDenied reads the deny table: from the running daemon, else from
// the pins.
func readDenied(stateDir string) ([]api.DeniedSource, error) {
	if c := api.Dial(stateDir); c != nil {
		return c.Denied()
	}
	p, err := loader.OpenShared(stateDir)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	ds, _, err := daemon.DeniedOf(p, time.Now(), api.MonotonicNow())
	return ds, err
}

// clearDenied releases the sources target names: through the running
// daemon, which records each as released; without one, from the pins,
// and no record is written.
func clearDenied(stateDir, target string) ([]api.DeniedSource, error) {
	if c := api.Dial(stateDir); c != nil {
		return c.ClearDenied(target)
	}
	t, err := api.ParseDenyTarget(target)
	if err != nil {
		return nil, err
	}
	p, err := loader.OpenShared(stateDir)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return daemon.ClearDenied(p, t, time.Now(), api.MonotonicNow())
}
