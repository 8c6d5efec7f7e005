package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"golang.org/x/sys/unix"
)

// rejectLine is one record in `show rejects -o json`, one per line.
type rejectLine struct {
	Time      time.Time `json:"time"`
	First     time.Time `json:"first"`
	Interface string    `json:"interface"`
	Class     string    `json:"class"`
	Source    string    `json:"source"`
	Reason    string    `json:"reason"`
	Count     uint64    `json:"count"`
}

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
			var lines []rejectLine
			wall := time.Now()
			if c := apiClient(g.stateDir); c != nil {
				var all []rejectLine
				if err := callAPI(c, http.MethodGet, "/v1/rejects", nil, &all); err != nil {
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
				mono := monotonicNow()
				for _, r := range recs {
					if keep(r, mono) {
						lines = append(lines, lineOf(r, wall, mono))
					}
				}
			}
			slices.SortFunc(lines, func(a, b rejectLine) int { return b.Time.Compare(a.Time) })
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

// lineOf is a record as `show rejects` prints it, its monotonic times
// turned into wall-clock times by the clocks' difference now.
func lineOf(r maps.Reject, wall time.Time, mono uint64) rejectLine {
	at := func(ns uint64) time.Time { return wall.Add(-time.Duration(mono - ns)) }
	return rejectLine{
		Time: at(r.LastNS), First: at(r.FirstNS), Interface: r.Interface,
		Class: r.Class.String(), Source: r.Source, Reason: r.Reason.String(), Count: r.Count,
	}
}

// keepLine is the filter of rejectFilter for a finished record; the
// names were checked there.
func keepLine(l rejectLine, class, reason string, since time.Duration, wall time.Time) bool {
	return (class == "" || l.Class == class) && (reason == "" || l.Reason == reason) &&
		(since == 0 || wall.Sub(l.Time) <= since)
}

// monotonicNow reads the clock the fast path stamps records with.
func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

func writeRejectsText(w io.Writer, lines []rejectLine) error {
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
