package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/control"
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
			var ifaces []string
			for _, a := range st.Attachments {
				ifaces = append(ifaces, a.Key())
			}
			v := maps.CallAdmissionViewOf(st.CallAdmission, st.Inputs, st.Rings, st.Stats, control.MonotonicCoarse(), ifaces)
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			writeCallAdmission(cmd.OutOrStdout(), v)
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

// num prints a charge or percent as IOS does for whole numbers, and with
// the fraction when there is one (a load charge of 72.5), to a tenth.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func writeCallAdmission(w io.Writer, v maps.CallAdmissionView) {
	if !v.Operational {
		fmt.Fprintln(w, "Call Admission Control is not operational")
	} else {
		if v.NewModel {
			fmt.Fprintln(w, "Cac New Model (SRSM) is ACTIVE")
			fmt.Fprintf(w, "Total call Session charges: %s, limit %s\n", num(v.SessionCharges), num(v.Limit))
		} else {
			fmt.Fprintln(w, "Cac New Model (SRSM) is INACTIVE")
			fmt.Fprintf(w, "Total call admission charges: %s, limit %s\n", num(v.TotalCharges), num(v.Limit))
		}
		fmt.Fprintf(w, "Total calls rejected %d, accepted %d\n", v.Rejected, v.Accepted)
		if v.NewModel {
			fmt.Fprintf(w, "Reject reason: CPU-limit: %d SessionCharges %d\n", v.Reasons["cpu-limit"], v.Reasons["session-charges"])
		}
		fmt.Fprintf(w, "Load metric: charge %s, unscaled %s%%\n", num(v.LoadCharge), num(v.LoadPercent))
		if v.NewModel {
			limit := "none"
			if v.CPULimitPercent > 0 {
				limit = num(v.CPULimitPercent) + "%"
			}
			fmt.Fprintf(w, "Current actual CPU: %s%%, Limit: %s\n", num(v.CPUPercent), limit)
		}
	}
	if len(v.Interfaces) == 0 {
		fmt.Fprintln(w, "Hardware CAC is currently not active")
	} else {
		fmt.Fprintf(w, "Hardware CAC (XDP) is currently active on %s\n", strings.Join(v.Interfaces, ", "))
	}
	if !v.Operational {
		return
	}
	// What IOS has no line for.
	if n := v.Reasons["buffers"] + v.Reasons["stale"]; n > 0 {
		fmt.Fprintf(w, "Reject reason: Buffers: %d Stale: %d\n", v.Reasons["buffers"], v.Reasons["stale"])
	}
	if v.BuffersFull {
		fmt.Fprintln(w, "Receive buffers: full, rejecting every call until they drain")
	}
	for _, t := range cac.CallTypeNames() {
		if c, ok := v.Charges[t]; ok {
			fmt.Fprintf(w, "Charge %s: %d for %ss, %d calls in force\n", t, c.Charge, num(c.LifetimeS), c.InForce)
		}
	}
	switch {
	case v.HeartbeatAgeMS == nil:
		fmt.Fprintln(w, "Control plane: none (attached without cacctl run; CPU and buffers are not measured)")
	case v.Stale:
		fmt.Fprintf(w, "Control plane: STALE, last heartbeat %s s ago (stale after %s s, on-stale %s)\n",
			num(float64(*v.HeartbeatAgeMS)/1000), num(float64(v.StaleAfterMS)/1000), v.OnStale)
	default:
		fmt.Fprintf(w, "Control plane: heartbeat %s s ago (stale after %s s, on-stale %s)\n",
			num(float64(*v.HeartbeatAgeMS)/1000), num(float64(v.StaleAfterMS)/1000), v.OnStale)
	}
}
