package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/internal/top"
)

func newTopCmd(g *globals) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "top [--once]",
		Short: "A live view: rates per class, rejected sources, agents, charges and buckets",
		Long: `top redraws every second what the filter admits and rejects per class and
why, the sources rejected most, the session agents when cacctl run watches
some, and the charges of call admission and the buckets. It fits the
terminal and follows its size; a line at the top says loudly when an
interface is not protected: nothing attached, an attachment gone since top
started, or an interface gone from under its filter.

Keys: 1-4 or tab pick the view (classes, sources, agents, charges), s sorts
the sources by rate (their rejects in the last full second) or by count
(their rejects in the last ten seconds, of those top read: the daemon keeps
about two seconds of records), the arrows and page keys scroll, q quits.

--once prints every view as plain text, a second apart from the first
reading (at once when nothing is attached), and exits: for scripts and
logs. top does the same when its output is not a terminal.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			read := top.NewReader(g.stateDir).Read
			first, err := read()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !once && !top.IsTerminal(out) {
				// A live view would be escape codes in a file or a pipe:
				// give what a script can read.
				fmt.Fprintln(cmd.ErrOrStderr(), "cacctl top: the output is not a terminal; printing one frame, as --once does")
				once = true
			}
			if once {
				return top.Once(out, first, read)
			}
			return top.Live(out, first, read)
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "print every view once as plain text and exit")
	return cmd
}
