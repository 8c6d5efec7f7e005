package main

import (
	"encoding/json"
	"errors"
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

func newShowRejectsCmd(g *globals) *cobra.Command {
	var class, reason, source string
	var since time.Duration
	var top, prefix, prefix6 int
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "rejects [--class C] [--reason R] [--since D] [--source S] [--top N] [--prefix LEN] [--prefix6 LEN] [-o text|json]",
		Short: "Rejected calls by source, class and reason, newest first, or the biggest sources",
		Long: `Every source, class and reason that was rejected has a record of each
second with rejects: when it began and ended, and how many calls it stands
for. The fast path keeps the records of the last seconds in a table; cacctl
run takes each finished second out of it, writes it to its --rejects-log
and keeps the newest in memory. While it runs, both come from it; without
it, those the table holds. --source keeps an address, a prefix or a MAC;
--top N sums the records of each source, class and reason and prints the
N biggest; --prefix LEN and --prefix6 LEN first roll IPv4 and IPv6
sources up into prefixes of that length, so that a flood spread over a
network shows as one line (alone, they sum every prefix). -o json prints
one JSON object per line.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := api.NewRejectFilter(class, reason, source, since)
			if err != nil {
				return usageError{err}
			}
			if top < 0 {
				return usagef("--top wants a count of 1 or more, got %d", top)
			}
			if err := errors.Join(api.CheckPrefixLen("--prefix", prefix, 32), api.CheckPrefixLen("--prefix6", prefix6, 128)); err != nil {
				return usageError{err}
			}
			lines, err := readRejectLines(g.stateDir)
			if err != nil {
				return err
			}
			lines = f.Keep(lines, time.Now())
			if prefix > 0 || prefix6 > 0 {
				lines = api.RollUp(lines, prefix, prefix6)
				if top == 0 {
					top = len(lines) // every prefix, summed
				}
			}
			if top > 0 {
				lines = api.Biggest(lines, top)
			} else {
				slices.SortFunc(lines, func(a, b api.RejectLine) int { return b.Time.Compare(a.Time) })
			}
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
	cmd.Flags().StringVar(&source, "source", "", "only this source: an address, a prefix (203.0.113.0/24) or a MAC")
	cmd.Flags().IntVar(&top, "top", 0, "the N sources, classes and reasons with the most rejects, summed")
	cmd.Flags().IntVar(&prefix, "prefix", 0, "sum IPv4 sources by prefixes of this length (e.g. 24)")
	cmd.Flags().IntVar(&prefix6, "prefix6", 0, "sum IPv6 sources by prefixes of this length (e.g. 48)")
	out = addOutputFlag(cmd)
	return cmd
}

// readRejectLines reads the records: from the running daemon, which has
// the finished ones and reads the tables between its sweeps, so that
// each record comes once; else from the tables.
func readRejectLines(stateDir string) ([]api.RejectLine, error) {
	if c := api.Dial(stateDir); c != nil {
		return c.Rejects()
	}
	recs, err := loader.ReadAllRejects(stateDir)
	if err != nil {
		return nil, err
	}
	wall, mono := time.Now(), api.MonotonicNow()
	lines := make([]api.RejectLine, 0, len(recs))
	for _, r := range recs {
		lines = append(lines, daemon.RejectLineOf(r, wall, mono))
	}
	return lines, nil
}

func writeRejectsText(w io.Writer, lines []api.RejectLine) error {
	if len(lines) == 0 {
		fmt.Fprintln(w, "no rejected calls")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST\tINTERFACE\tCLASS\tSOURCE\tREASON\tCOUNT")
	for _, l := range lines {
		reason := l.Reason
		if l.Rule != "" { // the account of a cli or called rule
			reason += " (" + l.Rule + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", l.Time.Format("2006-01-02 15:04:05.000"), l.Interface, l.Class, l.Source, reason, l.Count)
	}
	return tw.Flush()
}
