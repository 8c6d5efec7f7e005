package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

func newStatusCmd(g *globals) *cobra.Command {
	out := layoutFlag("text")
	cmd := &cobra.Command{
		Use:   "status [-o text|wide|json]",
		Short: "Each attached interface, its mode and program version, the daemon and its heartbeat",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := api.StatusReport{Version: version.String(), StateDir: g.stateDir, Interfaces: []api.InterfaceStatus{}, Orphans: []api.Orphan{},
				Missing: []api.MissingInterface{}}
			if c := api.Dial(g.stateDir); c != nil {
				st, err := c.Status()
				if err != nil {
					return err
				}
				v.Daemon = &st
			}
			atts, err := loader.Status(g.stateDir)
			if err != nil {
				return err
			}
			for _, a := range atts {
				v.Interfaces = append(v.Interfaces, api.InterfaceStatus{
					Interface: a.Key(), Mode: a.Mode, Priority: a.Priority, Link: a.Link, ProgramTag: a.ProgramTag, ProgramID: a.ProgramID, Current: a.Current, Egress: a.Egress,
				})
			}
			orphans, err := loader.Orphans(g.stateDir)
			if err != nil {
				return err
			}
			for _, o := range orphans {
				name := ""
				if o.Iface != "" {
					name = o.Key()
				}
				v.Orphans = append(v.Orphans, api.Orphan{Interface: name, Dir: o.Dir, Filter: o.Link, Iface: o.Iface})
			}
			ca, err := loader.ReadCallAdmission(g.stateDir)
			if err != nil {
				return err
			}
			if len(ca.Attachments) > 0 {
				cav := maps.CallAdmissionViewOf(ca.CallAdmission, ca.Inputs, ca.Rings, ca.Stats, control.MonotonicCoarse(), nil)
				v.HeartbeatAgeMS, v.Stale, v.OnStale = cav.HeartbeatAgeMS, cav.Stale, cav.OnStale
			}
			for _, key := range v.Unattached() {
				a := loader.AttachmentOfKey(key, v.Daemon.Netns)
				v.Missing = append(v.Missing, api.MissingInterface{Interface: key, Present: loader.Exists(a)})
			}
			// Named, not degraded: the filter protects what it watches.
			if v.UnwatchedListeners, err = daemon.StatusListeners(g.stateDir); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "cacctl: warning: cannot list every SIP listener to check it is watched: %v\n", err)
			}
			v.Degraded = v.DegradedBy()
			if out == "json" {
				if err := printJSON(cmd.OutOrStdout(), v); err != nil {
					return err
				}
			} else {
				writeStatus(cmd.OutOrStdout(), v, out == "wide")
			}
			if len(v.Degraded) > 0 {
				return degradedError{why: v.Degraded}
			}
			return nil
		},
	}
	cmd.Flags().VarP(&out, "output", "o", "output format: text (80 columns), wide (with program tags) or json")
	return cmd
}

// writeStatus writes v for the operator; wide adds each program's tag,
// which the narrow table leaves to stay within 80 columns.
func writeStatus(w io.Writer, v api.StatusReport, wide bool) {
	fmt.Fprintf(w, "cacctl %s, state in %s\n", v.Version, v.StateDir)
	if d := v.Daemon; d != nil {
		fmt.Fprintf(w, "daemon: running, pid %d, up %s; config %s, in force since %s\n",
			d.PID, time.Since(d.Since).Round(time.Second), d.Config, d.LoadedAt.Format(time.RFC3339))
		if d.Metrics != "" {
			fmt.Fprintf(w, "metrics: http://%s/metrics\n", d.Metrics)
		}
		switch {
		case d.LastError == "":
		case d.LastReloadRefused:
			fmt.Fprintf(w, "last reload refused: %s\n", d.LastError)
		default:
			fmt.Fprintf(w, "last reload in force, with errors: %s\n", d.LastError)
		}
	} else {
		fmt.Fprintln(w, "daemon: not running; the filter enforces the limits last put in force")
	}
	switch {
	case len(v.Interfaces) == 0:
	case v.HeartbeatAgeMS == nil:
		fmt.Fprintln(w, "control plane: none has written measurements (attached with cacctl attach)")
	case v.Stale:
		fmt.Fprintf(w, "control plane: STALE, last heartbeat %s ago; on-stale %s applies\n", show.MsAge(*v.HeartbeatAgeMS), v.OnStale)
	default:
		fmt.Fprintf(w, "control plane: heartbeat %s ago\n", show.MsAge(*v.HeartbeatAgeMS))
	}
	writeOrphans(w, v.Orphans)
	if len(v.Interfaces) == 0 {
		fmt.Fprintln(w, "xdpcac is attached to no interface")
		writeDegraded(w, v.Degraded)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "interface\tmode\tlink\tegress\tprogram\tversion"
	if wide {
		head += "\ttag"
	}
	fmt.Fprintln(tw, head)
	other := false
	for _, i := range v.Interfaces {
		prog := fmt.Sprintf("%d\tthis", i.ProgramID)
		if !i.Current {
			prog, other = fmt.Sprintf("%d\tanother", i.ProgramID), true
		}
		if wide {
			prog += "\t" + i.ProgramTag
		}
		mode := i.Mode
		if mode == "" {
			mode = "-"
		}
		if i.Priority != 0 {
			mode = fmt.Sprintf("%s (priority %d)", mode, i.Priority)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", i.Interface, mode, i.Link, i.Egress, prog)
	}
	tw.Flush()
	if other {
		fmt.Fprintln(w, "another version: a program of another cacctl; cacctl run takes it over")
	}
	writeUnwatched(w, v.UnwatchedListeners)
	writeDegraded(w, v.Degraded)
}

// writeUnwatched names the SIP listeners the filter does not watch
// (docs/design.md, "SIP listeners"); nothing when there are none.
func writeUnwatched(w io.Writer, ls []api.UnwatchedListener) {
	if len(ls) == 0 {
		return
	}
	fmt.Fprintln(w, "SIP listeners not watched:")
	for _, u := range ls {
		fmt.Fprintf(w, "  %s: %s\n", u, u.Reason)
	}
}

// writeOrphans says what attaches that were killed left, and how to
// remove it.
func writeOrphans(w io.Writer, orphans []api.Orphan) {
	for _, o := range orphans {
		switch {
		case o.Interface == "":
			fmt.Fprintf(w, "left by a stopped attach: %s, for no interface its name says; remove it by hand\n", o.Dir)
		case o.Filter:
			fmt.Fprintf(w, "left by a stopped attach: %s; the filter is on %s: cacctl detach %s or attach it again\n", o.Dir, o.Interface, o.Iface)
		default:
			fmt.Fprintf(w, "left by a stopped attach: %s, for %s; the next detach or attach of it removes it\n", o.Dir, o.Interface)
		}
	}
}

// writeDegraded ends the status with what keeps it from protecting.
func writeDegraded(w io.Writer, why []string) {
	if len(why) > 0 {
		fmt.Fprintf(w, "DEGRADED: %s\n", strings.Join(why, "; "))
	}
}
