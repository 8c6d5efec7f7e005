package main

import (
	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// newShowCallCmd is `show call admission statistics`, spelled as on IOS;
// `stat` and `stats` are accepted as IOS accepts abbreviations.
func newShowCallCmd(g *globals) *cobra.Command {
	var out *outputFlag
	stats := &cobra.Command{
		Use:     "statistics [-o text|json]",
		Aliases: []string{"stat", "stats"},
		Short:   "Cisco call admission: charges, load, CPU gate and rejects, in the IOS layout",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := loader.ReadCallAdmission(g.stateDir)
			if err != nil {
				return err
			}
			// The calls accepted and rejected since clear call admission
			// statistics; st.Stats are the fast path's, as the metrics
			// export them.
			per, err := loader.ReadAllStats(g.stateDir)
			if err != nil {
				return err
			}
			var ifaces []string
			for _, a := range st.Attachments {
				ifaces = append(ifaces, a.Key())
			}
			v := maps.CallAdmissionViewOf(st.CallAdmission, st.Inputs, st.Rings, loader.Total(per), control.MonotonicCoarse(), ifaces)
			v.ClearedAt = lastCleared(per)
			// The sample that refused, which only the daemon keeps: a
			// status it cannot give leaves the line out, not the view.
			if c := api.Dial(g.stateDir); c != nil {
				if d, err := c.Status(); err == nil && d.LastCPURefusal != nil {
					r := maps.CPURefusal(*d.LastCPURefusal)
					v.LastCPURefusal = &r
				}
			}
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			show.CallAdmission(cmd.OutOrStdout(), v)
			return nil
		},
	}
	out = addOutputFlag(stats)
	admission := &cobra.Command{Use: "admission", Short: "Cisco call admission", Args: exactArgs()}
	admission.AddCommand(stats)
	call := &cobra.Command{Use: "call", Short: "Calls", Args: exactArgs()}
	call.AddCommand(admission)
	return call
}
