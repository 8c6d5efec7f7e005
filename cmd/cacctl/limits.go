package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// newShowLimitsCmd is `show limits`: every bucket in force, per level, as
// the fast path holds it.
func newShowLimitsCmd(g *globals) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "limits [-o text|json]",
		Short: "Every limit in force, per level: classes, per source, environment, accounts and customers, agents",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loader.OpenShared(g.stateDir)
			if err != nil {
				return err
			}
			defer p.Close()
			in, err := maps.ReadInForce(maps.PolicyMapsOf(&p.XdpMaps))
			if err != nil {
				return err
			}
			v := maps.LimitsViewOf(in)
			nameAgents(g.stateDir, v.Agents)
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			return writeLimits(cmd.OutOrStdout(), v)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

// rate prints a limit as "CPS/s burst B", "fleet" for a fleet-scope
// one, or "-" for none.
func rate(l maps.LimitView) string {
	if l.Fleet {
		return "fleet (show fleet)"
	}
	if l.CPS == 0 {
		return "-"
	}
	return fmt.Sprintf("%s/s burst %s", show.Num(l.CPS), show.Num(l.Burst))
}

// sessions prints a limit of concurrent sessions as "HELD/MAX", or "-"
// for none.
func sessions(s maps.SessionsView) string {
	if s.Max == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", s.Held, s.Max)
}

func writeLimits(w io.Writer, v maps.LimitsView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "class\tlimit\tagent reserve\tper source\tkey")
	for _, c := range cac.Classes() {
		l := v.Classes[c.String()]
		key := "-"
		if l.PerSource.CPS != 0 {
			key = l.PerSource.Key
			if key == "ip" {
				key = fmt.Sprintf("ip (IPv6 /%d)", l.PerSource.IPv6Prefix)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c, rate(l.LimitView), show.Num(l.AgentReserve), rate(l.PerSource.LimitView), key)
	}
	fmt.Fprintf(tw, "environment\t%s\t%s\t\t\n", rate(v.Environment.LimitView), show.Num(v.Environment.AgentReserve))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Accounts) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "account rule\tlimit\tsessions\tcustomer\tcustomer sessions")
		for _, a := range v.Accounts {
			rule := a.Prefix
			switch {
			case a.CLI != "":
				rule = "cli " + a.CLI
			case a.Called != "":
				rule = "called " + a.Called
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", rule, rate(a.Limit), sessions(a.Sessions), rate(a.Customer), sessions(a.CustomerSessions))
		}
		tw.Flush()
	}
	for _, a := range v.Agents {
		down := "out of service: pass"
		if a.FailFast {
			down = "out of service: fail-fast"
		}
		name := fmt.Sprintf("session agent %d", a.Index)
		if a.Name != "" {
			name = "session agent " + a.Name
		}
		fmt.Fprintf(w, "%s: %s; sessions %s\n  connection %s; %s\n", name, rate(a.Limit), sessions(a.Sessions), rate(a.Connection), down)
	}
	return nil
}

// nameAgents names the agents of v as the running daemon's file in force
// does; the fast path knows them by index only. Without a daemon, or
// when its file cannot be read, they keep their indexes.
func nameAgents(stateDir string, v []maps.AgentLimitView) {
	c := api.Dial(stateDir)
	if c == nil || len(v) == 0 {
		return
	}
	st, err := c.Status()
	if err != nil {
		return
	}
	cfg, _, err := daemon.LoadOptions(st.Config)
	if err != nil {
		return
	}
	for i := range v {
		if v[i].Index < len(cfg.SessionAgents) {
			v[i].Name = cfg.SessionAgents[v[i].Index].Name
		}
	}
}
