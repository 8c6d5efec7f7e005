package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/internal/version"
	"github.com/xdpcac/xdpcac/loader"
)

// globals are the flags every command takes.
type globals struct {
	netns    string
	stateDir string
	// inDaemon: the command runs in the daemon for a reader, which must
	// not hand it to a daemon again, whatever capabilities it lacks.
	inDaemon bool
}

func newRootCmd() *cobra.Command { return newRoot(&globals{}) }

// setUp is what the process sets once, before any command is built.
func setUp() {
	// IOS abbreviations: `sh call adm stat` as on the router, where the
	// prefix names one command only. A package variable of cobra's: set
	// here, not per command, as the daemon builds commands concurrently
	// for its readers.
	cobra.EnablePrefixMatching = true
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "cacctl",
		Short: "Call admission control at the NIC",
		Long: `cacctl loads xdpcac's XDP filter, which recognises the first packet of every
new PPPoE, L2TP and SIP session (PADI/PADR, SCCRQ/ICRQ, INVITE/OPTIONS) and
admits or drops it, and shows what it counted.`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			err := checkPrivilege(cmd)
			if err == nil || !readCommand(cmd) || g.inDaemon {
				return err
			}
			if c := api.Dial(g.stateDir); c != nil {
				return forwardRead(cmd, args, c)
			}
			return notAReader(g.stateDir, err)
		},
	}
	root.PersistentFlags().StringVar(&g.netns, "netns", "", "act on an interface in this named network namespace (pins stay in this one)")
	root.PersistentFlags().StringVar(&g.stateDir, "state-dir", loader.DefaultStateDir, "bpffs directory holding the pinned state of each attachment")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newVersionCmd(),
		newRunCmd(g),
		newAttachCmd(g),
		newApplyCmd(g),
		newDetachCmd(g),
		newValidateCmd(g),
		newShowCmd(g),
		newStatusCmd(g),
		newDemoCmd(g),
		newTopCmd(g),
		newClearCmd(g),
		newGenDocsCmd(),
	)
	root.InitDefaultCompletionCmd()
	groupsRefuseStrays(root)
	return root
}

// outputFlag is -o text|json, checked before anything runs.
type outputFlag string

func (o *outputFlag) String() string { return string(*o) }
func (o *outputFlag) Type() string   { return "text|json" }
func (o *outputFlag) Set(s string) error {
	if !slices.Contains([]string{"text", "json"}, s) {
		return fmt.Errorf("want text or json, got %q", s)
	}
	*o = outputFlag(s)
	return nil
}

func addOutputFlag(cmd *cobra.Command) *outputFlag {
	o := outputFlag("text")
	cmd.Flags().VarP(&o, "output", "o", "output format: text or json")
	return &o
}

// layoutFlag is -o text|wide|json, for a show whose text layout has a
// wide form.
type layoutFlag string

func (o *layoutFlag) String() string { return string(*o) }
func (o *layoutFlag) Type() string   { return "text|wide|json" }
func (o *layoutFlag) Set(s string) error {
	if s != "text" && s != "wide" && s != "json" {
		return fmt.Errorf("want text, wide or json, got %q", s)
	}
	*o = layoutFlag(s)
	return nil
}

// exactArgs is cobra.ExactArgs with an error that says what is expected.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s takes %d argument(s): %s (got %d)", cmd.CommandPath(), len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// printJSON writes v as indented JSON, the -o json of every show.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
