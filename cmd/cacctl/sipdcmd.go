package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac/agents"
)

// agentsView is GET /v1/agents and `show sipd agents -o json`.
type agentsView struct {
	Targets []agents.Row `json:"targets"`
	// Answered and Unanswered count refused SIP requests answered with
	// 503, and those over the rate or not answerable (dropped).
	Answered   uint64 `json:"answered_503"`
	Unanswered uint64 `json:"unanswered"`
	// Responses counts the agents' out-service responses the fast path
	// handed up, whether or not they counted.
	Responses uint64 `json:"agent_responses"`
}

// newShowSipdCmd is `show sipd agents [NAME]`, spelled as on the Oracle SBC.
func newShowSipdCmd(g *globals) *cobra.Command {
	var out *outputFlag
	agentsCmd := &cobra.Command{
		Use:   "agents [NAME] [-o text|json]",
		Short: "Session agents: in or out of service, per destination and realm",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("%s takes at most one argument: NAME (got %d)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c := apiClient(g.stateDir)
			if c == nil {
				return errors.New("no cacctl run serves this state directory: session agents are watched by the daemon")
			}
			var v agentsView
			if err := callAPI(c, http.MethodGet, "/v1/agents", nil, &v); err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if *out == "json" {
				var keep []agents.Row
				for _, r := range v.Targets {
					if name == "" || r.Agent == name {
						keep = append(keep, r)
					}
				}
				if name != "" && len(keep) == 0 {
					return agents.WriteAgents(cmd.OutOrStdout(), v.Targets, name) // says which there are
				}
				v.Targets = keep
				return printJSON(cmd.OutOrStdout(), v)
			}
			return agents.WriteAgents(cmd.OutOrStdout(), v.Targets, name)
		},
	}
	out = addOutputFlag(agentsCmd)
	sipd := &cobra.Command{Use: "sipd", Short: "SIP: session agents", Args: exactArgs()}
	sipd.AddCommand(agentsCmd)
	return sipd
}
