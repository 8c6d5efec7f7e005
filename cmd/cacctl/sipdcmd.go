package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
)

// newShowSipdCmd is `show sipd agents [NAME]`, spelled as on the Oracle SBC.
func newShowSipdCmd(g *globals) *cobra.Command {
	out := layoutFlag("text")
	agentsCmd := &cobra.Command{
		Use:               "agents [NAME] [-o text|wide|json]",
		ValidArgsFunction: completeAgents(g),
		Short:             "Session agents: in or out of service, per destination and realm",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one argument: NAME (got %d)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c := api.Dial(g.stateDir)
			if c == nil {
				return errors.New("no cacctl run serves this state directory: session agents are watched by the daemon")
			}
			v, err := c.Agents()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if out == "json" {
				keep := []agents.Row{}
				for _, r := range v.Targets {
					if name == "" || r.Agent == name {
						keep = append(keep, r)
					}
				}
				if name != "" && len(keep) == 0 {
					return agents.WriteAgents(cmd.OutOrStdout(), v.Targets, name) // says which there are
				}
				v.Targets = keep
				egress := []agents.Egress{}
				for _, e := range v.Egress {
					if name == "" || e.Agent == name {
						egress = append(egress, e)
					}
				}
				v.Egress = egress
				return printJSON(cmd.OutOrStdout(), v)
			}
			if err := agents.WriteAgents(cmd.OutOrStdout(), v.Targets, name); err != nil {
				return err
			}
			return agents.WriteEgress(cmd.OutOrStdout(), v.Egress, name, out == "wide")
		},
	}
	agentsCmd.Flags().VarP(&out, "output", "o", "output format: text (80 columns), wide (a line each) or json")
	sipd := &cobra.Command{Use: "sipd", Short: "SIP: session agents", Args: exactArgs()}
	sipd.AddCommand(agentsCmd)
	return sipd
}
