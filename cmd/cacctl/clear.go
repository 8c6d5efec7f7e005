package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/loader"
)

// newClearCmd is `clear counters [IFACE]`, and IOS's `clear call admission
// statistics` for the same: buckets, charges and records stay, and the
// counters that show and top present start again from zero. As IOS leaves
// SNMP counters alone, the metrics go on counting: the fast path's
// counters are kept as a base to subtract, never zeroed (docs/design.md,
// "Clearing counters").
func newClearCmd(g *globals) *cobra.Command {
	clear := &cobra.Command{Use: "clear", Short: "Start counters again from zero"}
	counters := &cobra.Command{
		Use:   "counters [IFACE]",
		Short: "Zero the counters show and top present, of every attached interface or of one; metrics, limits, buckets and charges stay",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one argument: IFACE (got %d)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		ValidArgsFunction: completeAttached(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			only := ""
			if len(args) == 1 {
				only = loader.Attachment{Iface: args[0], Netns: g.netns}.Key()
			}
			cleared := 0
			at := time.Now() // one time for all: the sums count from it
			err := loader.EachPinned(g.stateDir, func(p *loader.Pinned) error {
				if only != "" && p.Attachment.Key() != only {
					return nil
				}
				if err := loader.ClearCounters(g.stateDir, p, at); err != nil {
					return fmt.Errorf("clear the counters: %w", err)
				}
				cleared++
				fmt.Fprintf(cmd.OutOrStdout(), "cleared the counters of %s\n", p.Attachment)
				return nil
			})
			if err == nil && cleared == 0 {
				if only != "" {
					return fmt.Errorf("xdpcac is not attached to %s", only)
				}
				return fmt.Errorf("xdpcac is attached to no interface")
			}
			return err
		},
	}
	// IOS: clear call admission statistics.
	admission := &cobra.Command{Use: "admission", Short: "Call admission"}
	admission.AddCommand(&cobra.Command{
		Use: "statistics", Short: "As clear counters: the counters of show call admission statistics", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error { return counters.RunE(cmd, nil) },
	})
	call := &cobra.Command{Use: "call", Short: "Calls"}
	call.AddCommand(admission)
	clear.AddCommand(counters, call, newClearDeniedCmd(g))
	return clear
}
