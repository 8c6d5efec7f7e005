package show

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/maps"
)

// Num prints a charge or percent as IOS does for whole numbers, and with
// the fraction when there is one (a load charge of 72.5), to a tenth.
func Num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// CallAdmission writes v in the layout of IOS's show call admission
// statistics, with the lines IOS has no counterpart for after it.
func CallAdmission(w io.Writer, v maps.CallAdmissionView) {
	if !v.Operational {
		fmt.Fprintln(w, "Call Admission Control is not operational")
	} else {
		if v.NewModel {
			fmt.Fprintln(w, "Cac New Model (SRSM) is ACTIVE")
			fmt.Fprintf(w, "Total call Session charges: %s, limit %s\n", Num(v.SessionCharges), Num(v.Limit))
		} else {
			fmt.Fprintln(w, "Cac New Model (SRSM) is INACTIVE")
			fmt.Fprintf(w, "Total call admission charges: %s, limit %s\n", Num(v.TotalCharges), Num(v.Limit))
		}
		fmt.Fprintf(w, "Total calls rejected %d, accepted %d\n", v.Rejected, v.Accepted)
		if v.NewModel {
			fmt.Fprintf(w, "Reject reason: CPU-limit: %d SessionCharges %d\n", v.Reasons["cpu-limit"], v.Reasons["session-charges"])
		}
		fmt.Fprintf(w, "Load metric: charge %s, unscaled %s%%\n", Num(v.LoadCharge), Num(v.LoadPercent))
		if v.NewModel {
			limit := "none"
			if v.CPULimitPercent > 0 {
				limit = Num(v.CPULimitPercent) + "%"
			}
			fmt.Fprintf(w, "Current actual CPU: %s%%, Limit: %s\n", Num(v.CPUPercent), limit)
			if r := v.LastCPURefusal; r != nil {
				// The sample that refused, which the current one may no
				// longer show.
				fmt.Fprintf(w, "Last CPU that refused: %s%%, %d calls in %s s, ended %s ago\n", Num(r.CPUPercent), r.Refused,
					Num(r.Until.Sub(r.From).Seconds()), MsAge(time.Since(r.Until).Milliseconds()))
			}
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
			fmt.Fprintf(w, "Charge %s: %d for %ss, %d calls in force\n", t, c.Charge, Num(c.LifetimeS), c.InForce)
		}
	}
	if v.ClearedAt != nil {
		// The calls rejected and accepted above count from then.
		fmt.Fprintf(w, "Last clearing of call admission statistics: %s ago\n", MsAge(time.Since(*v.ClearedAt).Milliseconds()))
	}
	switch {
	case v.HeartbeatAgeMS == nil:
		fmt.Fprintln(w, "Control plane: none (cacctl attach alone: CPU and buffers are not measured)")
	case v.Stale:
		fmt.Fprintf(w, "Control plane: STALE, last heartbeat %s s ago (stale after %s s, on-stale %s)\n",
			Num(float64(*v.HeartbeatAgeMS)/1000), Num(float64(v.StaleAfterMS)/1000), v.OnStale)
	default:
		fmt.Fprintf(w, "Control plane: heartbeat %s s ago (stale after %s s, on-stale %s)\n",
			Num(float64(*v.HeartbeatAgeMS)/1000), Num(float64(v.StaleAfterMS)/1000), v.OnStale)
	}
}

// MsAge prints an age in milliseconds to a tenth of a second.
func MsAge(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}
