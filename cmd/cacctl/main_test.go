package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func run(args ...string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestSubcommandHelp runs --help for every command: each must have one.
func TestSubcommandHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			path := strings.Fields(sub.CommandPath())[1:]
			out, err := run(append(path, "--help")...)
			if err != nil || !strings.Contains(out, "Usage:") || sub.Short == "" {
				t.Errorf("%s --help: %v\n%s", sub.CommandPath(), err, out)
			}
			walk(sub)
		}
	}
	walk(newRootCmd())
}

func TestArgumentErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"attach"}, "cacctl attach takes 1 argument(s): IFACE (got 0)"},
		{[]string{"attach", "eth0"}, `required flag(s) "config" not set`},
		{[]string{"detach", "a", "b"}, "cacctl detach takes 1 argument(s): IFACE (got 2)"},
		{[]string{"show", "stats", "-o", "yaml"}, `want text or json, got "yaml"`},
		{[]string{"validate"}, `required flag(s) "config" not set`},
		{[]string{"validate", "--config", "/nonexistent/cac.yaml"}, "read config: open /nonexistent/cac.yaml"},
		{[]string{"validate", "--config", "../../cac/config/testdata/full.yaml", "extra"}, "takes 0 argument(s)"},
	}
	for _, c := range cases {
		_, err := run(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cacctl %s: got %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	out, err := run("validate", "--config", "../../cac/config/testdata/full.yaml")
	if err != nil || !strings.Contains(out, "valid (1 interfaces, 4 class limits, 1 customers, 1 session agents)") {
		t.Errorf("validate: %v\n%s", err, out)
	}
}
