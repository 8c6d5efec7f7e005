package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/xdpcac/xdpcac/api"
)

// Readers (docs/design.md, "Read-only access"): a member of api.read-group
// has none of the capabilities the pins need, so the running daemon runs
// the read commands for it, with its own state directory and namespace,
// and hands back what they printed. What root sees, a reader sees.

// readCommand reports whether cmd only reads: what a reader may ask the
// daemon to run.
func readCommand(cmd *cobra.Command) bool {
	path := strings.Fields(cmd.CommandPath())
	if len(path) < 2 {
		return false
	}
	return slices.Contains([]string{"show", "status", "top", "version"}, path[1])
}

// forwarded is a read command the daemon ran: its output is printed, and
// its error (if any) and exit code are cacctl's.
type forwarded struct {
	msg  string
	code int
}

func (f forwarded) Error() string { return f.msg }

// forwardRead has the daemon run cmd for this process, which lacks the
// privilege to read the pins.
func forwardRead(cmd *cobra.Command, args []string, c *api.Client) error {
	line := strings.Fields(cmd.CommandPath())[1:]
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if cmd.LocalFlags().Lookup(f.Name) != nil && f.Name != "help" {
			line = append(line, "--"+f.Name+"="+f.Value.String())
		}
	})
	line = append(line, args...)
	ans, err := c.Read(line)
	if err != nil {
		return err
	}
	io.WriteString(cmd.OutOrStdout(), ans.Output)
	return forwarded{msg: ans.Error, code: ans.ExitCode}
}

// readerFor runs the read commands a reader asks the daemon of g for.
func readerFor(g globals) func(args []string, out io.Writer) (int, error) {
	return func(args []string, out io.Writer) (int, error) {
		for _, a := range args {
			if a == "--state-dir" || a == "--netns" || strings.HasPrefix(a, "--state-dir=") || strings.HasPrefix(a, "--netns=") {
				return exitUsage, usagef("--state-dir and --netns are the daemon's own")
			}
		}
		root := newRoot(&globals{inDaemon: true})
		cmd, _, err := root.Find(args)
		if err != nil {
			return exitUsage, usageError{err}
		}
		switch {
		case !readCommand(cmd):
			return exitUsage, usagef("%s changes what the filter does: it is for root", cmd.CommandPath())
		case cmd.Name() == "top" && !slices.Contains(args, "--once") && !slices.Contains(args, "--once=true"):
			return exitUsage, usagef("top's live view reads the pins itself: it needs root; a reader has top --once")
		}
		root.SetArgs(append([]string{"--state-dir", g.stateDir, "--netns=" + g.netns}, args...))
		root.SetOut(out)
		root.SetErr(out)
		err = root.Execute()
		return exitCode(err), err
	}
}

// notAReader explains a refused connection to the daemon's socket.
func notAReader(stateDir string, err error) error {
	return fmt.Errorf("%w; a daemon serves its readers at %s when api.read-group names a group you are in", err, api.PathsOf(stateDir).Socket)
}
