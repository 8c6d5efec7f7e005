package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/internal/version"
)

func newVersionCmd() *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "version [-o text|json]",
		Short: "The build of this cacctl: version, commit, Go version and platform",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := version.Read()
			if *out == "json" {
				return printJSON(cmd.OutOrStdout(), in)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cacctl %s (%s, %s)\n", in.Version, in.GoVersion, in.Platform)
			if in.Commit != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "commit %s of %s\n", in.Commit, in.CommitAt)
			}
			return nil
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}
