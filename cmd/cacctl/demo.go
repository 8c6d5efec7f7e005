package main

import (
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/internal/demo"
)

func newDemoCmd(g *globals) *cobra.Command {
	var duration time.Duration
	var cpuSource string
	cmd := &cobra.Command{
		Use:   "demo [--duration D]",
		Short: "A testbed in network namespaces, the daemon on it, and storms with live counts",
		Long: `demo builds a BRAS and a peer in two new network namespaces joined by a veth
pair and runs the daemon (cacctl run) in this process on the BRAS side with
an embedded configuration, its metrics on loopback. From the peer side it
sends three storms: a PADI storm after an outage, an ICRQ burst after a
tunnel flap, and a SIP scanner while a trusted peer places real calls to a
SIP server on the BRAS side. Each second it prints what the filter admitted
and rejected, the call admission the daemon measured (CPU against the gate,
charges in force, heartbeat) and the trusted peer's calls. It ends with the
call admission statistics and what each storm showed, and exits non-zero
when the filter did not hold a storm back or the trusted peer's calls did
not complete. It removes everything it made, also when interrupted.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if duration < 3*time.Second {
				return fmt.Errorf("--duration: want at least 3s, got %v", duration)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return demo.Run(ctx, cmd.OutOrStdout(), duration, cpuSource)
		},
	}
	cmd.Flags().DurationVar(&duration, "duration", 45*time.Second, "how long the storms last in all")
	cmd.Flags().StringVar(&cpuSource, "cpu-source", "", "what the CPU gate measures, as cpu.source of the configuration (default: this process alone, the testbed's control plane)")
	return cmd
}
