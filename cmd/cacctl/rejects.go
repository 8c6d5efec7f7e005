package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

func newShowRejectsCmd(g *globals) *cobra.Command {
	var class, reason string
	var since time.Duration
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "rejects [--class C] [--reason R] [--since D] [-o text|json]",
		Short: "Rejected calls by source, class and reason, newest first",
		Long: `Every source, class and reason that was rejected has a record of each
second with rejects: when it began and ended, and how many calls it stands
for. The fast path keeps the records of the last seconds in a table; cacctl
run takes each finished second out of it, writes it to its --rejects-log
and keeps the newest in memory. While it runs, both come from it; without
it, those the table holds. -o json prints one JSON object per line.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			keep, err := rejectFilter(class, reason, since)
			if err != nil {
				return err
			}
			// The running daemon has the finished records and reads the
			// tables between its sweeps, so each record comes once.
			var lines []api.RejectLine
			wall := time.Now()
			if c := api.Dial(g.stateDir); c != nil {
				all, err := c.Rejects()
				if err != nil {
					return err
				}
				for _, l := range all {
					if keepLine(l, class, reason, since, wall) {
						lines = append(lines, l)
					}
				}
			} else {
				recs, err := loader.ReadAllRejects(g.stateDir)
				if err != nil {
					return err
				}
				mono := api.MonotonicNow()
				for _, r := range recs {
					if keep(r, mono) {
						lines = append(lines, api.RejectLineOf(r, wall, mono))
					}
				}
			}
			slices.SortFunc(lines, func(a, b api.RejectLine) int { return b.Time.Compare(a.Time) })
			if *out == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				for _, l := range lines {
					if err := enc.Encode(l); err != nil {
						return err
					}
				}
				return nil
			}
			return writeRejectsText(cmd.OutOrStdout(), lines)
		},
	}
	cmd.Flags().StringVar(&class, "class", "", "only this class (pppoe-padi, sip-invite, ...)")
	cmd.Flags().StringVar(&reason, "reason", "", "only this reason (source, class, environment, ...)")
	cmd.RegisterFlagCompletionFunc("class", completeWords(classNames()))
	cmd.RegisterFlagCompletionFunc("reason", completeWords(reasonNames()))
	cmd.Flags().DurationVar(&since, "since", 0, "only records whose last reject is this recent (e.g. 5m)")
	out = addOutputFlag(cmd)
	return cmd
}

func rejectFilter(class, reason string, since time.Duration) (func(maps.Reject, uint64) bool, error) {
	var c cac.Class
	var r cac.Reason
	var err error
	if class != "" {
		if c, err = cac.ParseClass(class); err != nil {
			return nil, fmt.Errorf("--class: %w", err)
		}
	}
	if reason != "" {
		if r, err = cac.ParseReason(reason); err != nil {
			return nil, fmt.Errorf("--reason: %w", err)
		}
	}
	if since < 0 {
		return nil, fmt.Errorf("--since must not be negative, got %v", since)
	}
	return func(rec maps.Reject, mono uint64) bool {
		return (class == "" || rec.Class == c) && (reason == "" || rec.Reason == r) &&
			(since == 0 || mono-rec.LastNS <= uint64(since))
	}, nil
}

// keepLine is the filter of rejectFilter for a finished record; the
// names were checked there.
func keepLine(l api.RejectLine, class, reason string, since time.Duration, wall time.Time) bool {
	return (class == "" || l.Class == class) && (reason == "" || l.Reason == reason) &&
		(since == 0 || wall.Sub(l.Time) <= since)
}

func writeRejectsText(w io.Writer, lines []api.RejectLine) error {
	if len(lines) == 0 {
		fmt.Fprintln(w, "no rejected calls")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST\tINTERFACE\tCLASS\tSOURCE\tREASON\tCOUNT")
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", l.Time.Format("2006-01-02 15:04:05.000"), l.Interface, l.Class, l.Source, l.Reason, l.Count)
	}
	return tw.Flush()
}
