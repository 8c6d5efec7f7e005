package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/violation"
)

// newShowViolationsCmd is `show violations`: what Juniper's `show
// ddos-protection protocols violations` gives for its policers, for each
// class and level of the pipeline (docs/design.md, "Violations").
func newShowViolationsCmd(g *globals) *cobra.Command {
	out := layoutFlag("text")
	cmd := &cobra.Command{
		Use:   "violations [-o text|wide|json]",
		Short: "Classes and levels refusing now or in the last five minutes: since when, arrival and refusal rates, peaks",
		Long: `A class and level is in violation while it refuses: from the second of its
first refusal until three seconds pass without one. cacctl run reads the
counters every second and keeps five minutes of them: the arrival rate is
the class's first packets a second, admitted or not, and the refused rate
the level's refusals, now, at their peak and on average over the last one
and five minutes. Those in violation come first, the oldest first, then
those that ended within five minutes. -o wide adds every rate; -o json
gives them all.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := api.Dial(g.stateDir)
			if c == nil {
				return errors.New("no cacctl run serves this state directory: violations are kept by the daemon, which reads the counters every second")
			}
			v, err := c.Violations()
			if err != nil {
				return err
			}
			if out == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			return writeViolations(cmd.OutOrStdout(), v, out == "wide", time.Now())
		},
	}
	cmd.Flags().VarP(&out, "output", "o", "output format: text (80 columns), wide (every rate) or json")
	return cmd
}

// writeViolations prints vs as a table within 80 columns, or every rate
// with wide.
func writeViolations(w io.Writer, vs []violation.View, wide bool, now time.Time) error {
	if len(vs) == 0 {
		_, err := fmt.Fprintf(w, "no class or level refused in the last %v\n", violation.Window)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if wide {
		fmt.Fprintln(tw, "class\tlevel\tsince\tuntil\tepisodes\trefused\tarrival/s\tpeak 1m\tpeak 5m\tavg 1m\tavg 5m\trefused/s\tpeak 1m\tpeak 5m\tavg 1m\tavg 5m\t")
	} else {
		fmt.Fprintln(tw, "class\tlevel\tsince\tuntil\tin/s\tpeak/s\trefused/s\t")
	}
	for _, v := range vs {
		until := "now"
		if v.Ended != nil {
			until = clock(*v.Ended, now, wide)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", v.Class, v.Level, clock(v.Since, now, wide), until)
		if wide {
			a, r := v.Arrival, v.Refused
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", v.Episodes, v.Rejected,
				perSec(a.Now), perSec(a.Peak1m), perSec(a.Peak5m), perSec(a.Avg1m), perSec(a.Avg5m),
				perSec(r.Now), perSec(r.Peak1m), perSec(r.Peak5m), perSec(r.Avg1m), perSec(r.Avg5m))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", perSec(v.Arrival.Now), perSec(v.Arrival.Peak5m), perSec(v.Refused.Now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	foot := "in: first packets offered a second, admitted or not; peak: of the last 5 min"
	if wide {
		foot = "rates a second: now (the last second), peaks and averages of the last 1 and 5 minutes"
	}
	_, err := fmt.Fprintln(w, foot)
	return err
}

// clock is t as a wall clock reads it; a time of another day than now's
// is its day alone, or its day and time with full.
func clock(t, now time.Time, full bool) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		if full {
			return t.Format("Jan 2 15:04:05")
		}
		return t.Format("Jan 2")
	}
	return t.Format("15:04:05")
}

// perSec is a rate a second, whole from 10 up.
func perSec(r float64) string {
	if r >= 10 || r == 0 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
