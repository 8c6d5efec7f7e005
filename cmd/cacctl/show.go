package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

func newShowCmd(g *globals) *cobra.Command {
	show := &cobra.Command{
		Use:   "show",
		Short: "Show what the filter counted",
		Args:  exactArgs(),
	}
	show.AddCommand(newShowStatsCmd(g), newShowRejectsCmd(g), newShowCallCmd(g), newShowSipdCmd(g), newShowLimitsCmd(g), newShowFleetCmd(g), newShowViolationsCmd(g), newShowDeniedCmd(g))
	return show
}

func newShowStatsCmd(g *globals) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "stats [-o text|json]",
		Short: "Counters of every class, summed over CPUs and attached interfaces",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			per, err := loader.ReadAllStats(g.stateDir)
			if err != nil {
				return err
			}
			total := loader.Total(per)
			if *out == "json" {
				v := total.View()
				v.ClearedAt = lastCleared(per)
				v.Interfaces = make(map[string]maps.StatsView, len(per))
				for _, a := range per {
					av := a.Stats.View()
					av.ClearedAt = lastCleared([]loader.AttachmentStats{a})
					v.Interfaces[a.Key()] = av
				}
				return printJSON(cmd.OutOrStdout(), v)
			}
			return writeStatsText(cmd.OutOrStdout(), total, per)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

func writeStatsText(w io.Writer, s maps.Stats, per []loader.AttachmentStats) error {
	if len(per) == 0 {
		fmt.Fprintln(w, "xdpcac is attached to no interface")
	}
	for _, a := range per {
		var seen uint64
		for _, c := range cac.Classes() {
			if !c.Sessionless() {
				seen += a.Stats.Classes[c].Seen()
			}
		}
		fmt.Fprintf(w, "%s: %d first packets, %d in-dialog, %d malformed\n", a.Key(), seen,
			a.Stats.SIPInDialog(), a.Stats.Malformed())
		if !a.ClearedAt.IsZero() {
			// As IOS says it: the counters below count from then.
			fmt.Fprintf(w, "%s: last clearing of counters %s ago\n", a.Key(), show.MsAge(time.Since(a.ClearedAt).Milliseconds()))
		}
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
	// Lines within 80 columns, as a terminal of a router's console has.
	fmt.Fprintf(w, "fragment %d, passed_other %d\n", s.Fragment, s.PassedOther)
	fmt.Fprintf(w, "odd forms: %d SIP requests, %d PADI/PADR with a session ID\n", s.SIPOddForms, s.PPPoEOddForms)
	fmt.Fprintf(w, "uncharged: %d in-dialog requests of known dialogs\n", s.SIPInDialogVerified)
	fmt.Fprintf(w, "INVITE retransmissions, uncharged: %d passed, %d refused again\n", s.SIPRetransmits, s.SIPRetransmitsRefused)
	fmt.Fprintf(w, "L2TP ICRQs refused: %d answered (ZLB), %d dropped (tunnel unknown)\n", s.L2TPAnswered, s.L2TPUnanswered)
	fmt.Fprintf(w, "L2TP ICRQ copies, uncharged: %d\n", s.L2TPRetransmits)
	fmt.Fprintf(w, "denied frames: %d by deny lists, %d by the deny table\n", s.DeniedStatic, s.DeniedAuto)
	fmt.Fprintf(w, "auto-denied: %d sources added to the deny table\n", s.DenyAdded)
	if s.RejectRecordsLost > 0 || s.SIPEventsLost > 0 {
		// The daemon fell behind its ring buffers: say so, it is rare.
		fmt.Fprintf(w, "lost to full ring buffers: %d reject records, %d SIP events\n",
			s.RejectRecordsLost, s.SIPEventsLost)
	}
	return nil
}

// lastCleared is the latest clear counters of per, for the cleared_at of
// -o json; nil when none of them was cleared.
func lastCleared(per []loader.AttachmentStats) *time.Time {
	var last *time.Time
	for _, a := range per {
		if !a.ClearedAt.IsZero() && (last == nil || a.ClearedAt.After(*last)) {
			at := a.ClearedAt
			last = &at
		}
	}
	return last
}
