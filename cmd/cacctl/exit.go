package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, for scripts: what went wrong decides the code, not the
// wording of the message.
const (
	exitOK       = 0
	exitFailed   = 1 // the command ran and failed
	exitUsage    = 2 // the command line is wrong: nothing ran
	exitDegraded = 3 // status: the filter is not protecting as configured
)

// usageError is a command line cacctl cannot act on.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// degradedError is a status that was printed in full and says the filter
// is not protecting as configured.
type degradedError struct{ why []string }

func (e degradedError) Error() string { return "degraded: " + strings.Join(e.why, "; ") }

// loggedError went to the daemon's log already, in its format: main
// prints it no more.
type loggedError struct{ err error }

func (e loggedError) Error() string { return e.err.Error() }
func (e loggedError) Unwrap() error { return e.err }

// exitCode is the code err ends cacctl with.
func exitCode(err error) int {
	var u usageError
	var d degradedError
	var f forwarded
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &f):
		return f.code
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &d):
		return exitDegraded
	case isCobraUsage(err):
		return exitUsage
	}
	return exitFailed
}

// isCobraUsage recognises what cobra refuses before a command runs: an
// unknown command or flag, a flag without its value, a required flag not
// set. Cobra returns these as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command ", "unknown flag: ", "unknown shorthand flag: ", "flag needs an argument: ",
		"required flag(s) ", "invalid argument ", "bad flag syntax: "} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

// groupsRefuseStrays gives every command that only groups others (show,
// show call, completion, ...) a RunE that refuses what is not one of its
// subcommands: without it cobra prints help and exits 0 for `show bogus`.
func groupsRefuseStrays(c *cobra.Command) {
	for _, sub := range c.Commands() {
		groupsRefuseStrays(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		slices.Sort(names)
		if len(args) == 0 {
			// Help, as cobra would print it, but on stderr and not as a
			// success: a script that forgot the subcommand did nothing.
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help()
			return usagef("%s wants one of: %s", cmd.CommandPath(), strings.Join(names, ", "))
		}
		// IOS: a prefix of more than one command is ambiguous, and
		// says which it could be.
		var could []string
		for _, n := range names {
			if strings.HasPrefix(n, args[0]) {
				could = append(could, n)
			}
		}
		if len(could) > 1 {
			return usagef("%s: ambiguous command %q: %s", cmd.CommandPath(), args[0], strings.Join(could, ", "))
		}
		return usagef("%s has no command %q: want one of %s", cmd.CommandPath(), args[0], strings.Join(names, ", "))
	}
}
