package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

func newShowCmd(g *globals) *cobra.Command {
	show := &cobra.Command{
		Use:   "show",
		Short: "Show what the filter counted",
		Args:  exactArgs(),
	}
	show.AddCommand(newShowStatsCmd(g))
	return show
}

func newShowStatsCmd(g *globals) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "stats [-o text|json]",
		Short: "Counters of every class, summed over CPUs and attached interfaces",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, atts, err := loader.SumStats(g.stateDir)
			if err != nil {
				return err
			}
			if *out == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s.View())
			}
			return writeStatsText(cmd.OutOrStdout(), s, atts)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

func writeStatsText(w io.Writer, s maps.Stats, atts []loader.Attachment) error {
	if len(atts) == 0 {
		fmt.Fprintln(w, "xdpcac is attached to no interface")
	} else {
		fmt.Fprintf(w, "xdpcac on %d interface(s):", len(atts))
		for _, a := range atts {
			fmt.Fprintf(w, " %s", a)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\tseen\tadmitted\trejected\t")
	for _, c := range cac.Classes() {
		cs := s.Classes[c]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", c, cs.Seen(), cs.Admitted, cs.RejectedTotal())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cac.Classes() {
		for _, r := range cac.Reasons() {
			if n := s.Classes[c].Rejected[r]; n > 0 {
				fmt.Fprintf(w, "  %s rejected by %s: %d\n", c, r, n)
			}
		}
	}
	fmt.Fprintf(w, "sip-indialog %d, fragment %d, malformed %d, passed_other %d\n",
		s.SIPInDialog, s.Fragment, s.Malformed, s.PassedOther)
	return nil
}
