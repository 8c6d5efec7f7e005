package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/internal/show"
)

// newShowFleetCmd is `show fleet`: the fleet the daemon renews leases
// from, its members and this box's lease of each fleet-scope limit. Only
// the daemon knows them, so it asks the daemon and fails without one, as
// show sipd agents does.
func newShowFleetCmd(g *globals) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "fleet [-o text|json]",
		Short: "The fleet: its state, members, and this box's lease of each fleet-scope limit",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := api.Dial(g.stateDir)
			if c == nil {
				return errors.New("no cacctl run serves this state directory: fleet leases are renewed by the daemon")
			}
			v, err := c.Fleet()
			if err != nil {
				return fmt.Errorf("show fleet: %w", err)
			}
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), v)
			}
			return writeFleet(cmd.OutOrStdout(), v)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

// writeFleet writes v as show fleet prints it: a header block, the
// members Redis holds, then the leases.
func writeFleet(w io.Writer, v api.Fleet) error {
	if !v.Configured {
		_, err := fmt.Fprintln(w, "No fleet in force: the configuration has no fleet block")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Fleet:\t%s\n", v.Name)
	fmt.Fprintf(tw, "Member:\t%s\n", v.Member)
	fmt.Fprintf(tw, "State:\t%s\n", v.State)
	fmt.Fprintf(tw, "On fleet lost:\t%s, after %s\n", v.OnFleetLost, show.MsAge(v.LostAfterMS))
	fmt.Fprintf(tw, "Lease:\tlifetime %s, renew %s\n", show.MsAge(v.LeaseLifetimeMS), show.MsAge(v.LeaseRenewMS))
	if v.LastRenewalAgeMS != nil {
		fmt.Fprintf(tw, "Last renewal:\t%s ago\n", show.MsAge(*v.LastRenewalAgeMS))
		fmt.Fprintf(tw, "Redis RTT:\t%s\n", rtt(v.RedisRTTUS))
	} else {
		fmt.Fprintf(tw, "Last renewal:\tnone yet\n")
		fmt.Fprintf(tw, "Redis RTT:\t-\n")
	}
	fmt.Fprintf(tw, "Renewals:\t%d answered, %d failed\n", v.RenewalsAnswered, v.RenewalsFailed)
	if v.Master != "" {
		fmt.Fprintf(tw, "Master:\t%s, %d failovers seen\n", v.Master, v.Failovers)
	}
	fmt.Fprintf(tw, "Members:\t%d\n", v.Members)
	if v.LastError != "" {
		fmt.Fprintf(tw, "Last error:\t%s\n", v.LastError)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch {
	case v.MembersError != "":
		fmt.Fprintf(w, "Members seen in Redis: unknown (%s)\n", v.MembersError)
	case len(v.MembersSeen) == 0:
		fmt.Fprintln(w, "Members seen in Redis: none")
	default:
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "box\tlast renewal")
		for _, m := range v.MembersSeen {
			fmt.Fprintf(tw, "%s\t%s ago\n", m.Box, show.MsAge(m.LastRenewalAgeMS))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(v.Limits) == 0 {
		_, err := fmt.Fprintln(w, "No fleet-scope limit in force")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "limit\tcps\tburst\theld\tgranted\tspent\texpired\treturned\tdemand\t")
	local := int64(0)
	for _, l := range v.Limits {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s/s\t\n", l.Name, show.Num(l.CPS), show.Num(l.Burst),
			l.Tokens, l.Granted, l.Spent, l.Expired, l.Returned, show.Num(l.DemandCPS))
		local += l.GrantedLocal
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if local > 0 {
		// Apart from what the fleet granted: what the box gave itself.
		for _, l := range v.Limits {
			if l.GrantedLocal > 0 {
				fmt.Fprintf(w, "%s: %d of the tokens granted were the box's own while the fleet was lost\n", l.Name, l.GrantedLocal)
			}
		}
	}
	return nil
}

// rtt prints a round trip in microseconds to the unit that reads best:
// a local Redis answers in microseconds, a remote one in milliseconds.
func rtt(us int64) string {
	d := time.Duration(us) * time.Microsecond
	if d >= time.Millisecond {
		d = d.Round(100 * time.Microsecond)
	}
	return d.String()
}
