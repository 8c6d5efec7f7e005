package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// statusView is `cacctl status -o json`.
type statusView struct {
	Version  string `json:"version"`
	StateDir string `json:"state_dir"`
	// Daemon is null when no cacctl run serves this state directory.
	Daemon         *api.Status       `json:"daemon"`
	HeartbeatAgeMS *int64            `json:"heartbeat_age_ms"`
	Stale          bool              `json:"stale"`
	OnStale        string            `json:"on_stale"`
	Interfaces     []interfaceStatus `json:"interfaces"`
	// Orphans are directories attaches that were killed left behind.
	Orphans []orphanStatus `json:"orphans"`
}

// orphanStatus is one directory of an attach killed before it finished.
type orphanStatus struct {
	Interface string `json:"interface"` // "" when its name does not say
	Dir       string `json:"dir"`
	// Filter says it holds the XDP link: the filter is on the interface
	// until a detach or an attach of it removes it.
	Filter bool   `json:"filter_on"`
	iface  string // what detach takes
}

type interfaceStatus struct {
	Interface string `json:"interface"`
	Mode      string `json:"mode"`
	// Priority is the run priority in the libxdp dispatcher, in mode
	// multi only.
	Priority   uint32 `json:"priority,omitempty"`
	Link       string `json:"link"`
	ProgramTag string `json:"program_tag"`
	Current    bool   `json:"current"`
	// Egress is how the egress program that learns the dialogs the SIP
	// server opens is attached: tcx, clsact, none (attached by a version
	// before it) or missing (cacctl run attaches it again).
	Egress string `json:"egress"`
}

func newStatusCmd(g *globals) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "status [-o text|json]",
		Short: "Each attached interface, its mode and program version, the daemon and its heartbeat",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := statusView{Version: version.String(), StateDir: g.stateDir}
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
				v.Interfaces = append(v.Interfaces, interfaceStatus{
					Interface: a.Key(), Mode: a.Mode, Priority: a.Priority, Link: a.Link, ProgramTag: a.ProgramTag, Current: a.Current, Egress: a.Egress,
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
				v.Orphans = append(v.Orphans, orphanStatus{Interface: name, Dir: o.Dir, Filter: o.Link, iface: o.Iface})
			}
			ca, err := loader.ReadCallAdmission(g.stateDir)
			if err != nil {
				return err
			}
			if len(ca.Attachments) > 0 {
				cav := maps.CallAdmissionViewOf(ca.CallAdmission, ca.Inputs, ca.Rings, ca.Stats, control.MonotonicCoarse(), nil)
				v.HeartbeatAgeMS, v.Stale, v.OnStale = cav.HeartbeatAgeMS, cav.Stale, cav.OnStale
			}
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			writeStatus(cmd.OutOrStdout(), v)
			return nil
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

func writeStatus(w io.Writer, v statusView) {
	fmt.Fprintf(w, "cacctl %s, state in %s\n", v.Version, v.StateDir)
	if d := v.Daemon; d != nil {
		fmt.Fprintf(w, "daemon: running, pid %d, up %s; config %s, in force since %s\n",
			d.PID, time.Since(d.Since).Round(time.Second), d.Config, d.LoadedAt.Format(time.RFC3339))
		if d.Metrics != "" {
			fmt.Fprintf(w, "metrics: http://%s/metrics\n", d.Metrics)
		}
		if d.LastError != "" {
			fmt.Fprintf(w, "last reload refused: %s\n", d.LastError)
		}
	} else {
		fmt.Fprintln(w, "daemon: not running; the filter enforces the limits last put in force")
	}
	switch {
	case len(v.Interfaces) == 0:
	case v.HeartbeatAgeMS == nil:
		fmt.Fprintln(w, "control plane: none has written measurements (attached with cacctl attach)")
	case v.Stale:
		fmt.Fprintf(w, "control plane: STALE, last heartbeat %s ago; on-stale %s applies\n", msAge(*v.HeartbeatAgeMS), v.OnStale)
	default:
		fmt.Fprintf(w, "control plane: heartbeat %s ago\n", msAge(*v.HeartbeatAgeMS))
	}
	writeOrphans(w, v.Orphans)
	if len(v.Interfaces) == 0 {
		fmt.Fprintln(w, "xdpcac is attached to no interface")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "interface\tmode\tlink\tegress\tprogram")
	for _, i := range v.Interfaces {
		prog := "this version (" + i.ProgramTag + ")"
		if !i.Current {
			prog = "another version (" + i.ProgramTag + "): cacctl run takes it over"
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
}

func msAge(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// writeOrphans says what attaches that were killed left, and how to
// remove it.
func writeOrphans(w io.Writer, orphans []orphanStatus) {
	for _, o := range orphans {
		switch {
		case o.Interface == "":
			fmt.Fprintf(w, "left by a stopped attach: %s, for no interface its name says; remove it by hand\n", o.Dir)
		case o.Filter:
			fmt.Fprintf(w, "left by a stopped attach: %s; the filter is on %s: cacctl detach %s or attach it again\n", o.Dir, o.Interface, o.iface)
		default:
			fmt.Fprintf(w, "left by a stopped attach: %s, for %s; the next detach or attach of it removes it\n", o.Dir, o.Interface)
		}
	}
}
