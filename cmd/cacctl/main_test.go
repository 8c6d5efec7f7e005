package main

import (
	"bytes"
	"encoding/json"
	"os"
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
		{[]string{"validate"}, "cacctl validate wants the file to check: cacctl validate FILE"},
		{[]string{"validate", "--config", "/nonexistent/cac.yaml"}, "read config: open /nonexistent/cac.yaml"},
		{[]string{"validate", "/nonexistent/cac.yaml"}, "read config: open /nonexistent/cac.yaml"},
		{[]string{"validate", "--config", "../../cac/config/testdata/full.yaml", "extra"}, "was given two files, extra and --config ../../cac/config/testdata/full.yaml"},
		{[]string{"validate", "a.yaml", "b.yaml"}, "takes one file, as FILE or --config FILE (got 2 arguments)"},
		{[]string{"s"}, `cacctl: ambiguous command "s": show, status`},
		{[]string{"show", "s"}, `cacctl show: ambiguous command "s": `},
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
	if err != nil || !strings.Contains(out, "valid (1 interfaces, 6 class limits, 1 customers, 1 session agents)") {
		t.Errorf("validate: %v\n%s", err, out)
	}
}

// TestValidateRefuses: each kind of mistake is named with file, line and key.
func TestValidateRefuses(t *testing.T) {
	path := t.TempDir() + "/cac.yaml"
	body := "ports: {sip: [5060, 65536]}\n" + // port out of range
		"classes:\n" +
		"  sip-invite: {cps: -3}\n" + // negative
		"  l2tp-icrq: {cps: many}\n" + // not a number
		"  sip-subscribe: {cps: 1}\n" + // unknown class
		"colour: blue\n" // unknown key
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := run("validate", "--config", path)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		path + ":1:21: ports.sip[1]: must be from 1 to 65535, got 65536",
		path + ":3:21: classes.sip-invite.cps: must be at least 0.001, got -3",
		path + `:4:20: classes.l2tp-icrq.cps: must be a number, got "many"`,
		path + ":5:3: classes.sip-subscribe: unknown key",
		path + ":6:1: colour: unknown key",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// TestExitCodes: a usage error is 2 and never help with 0; a failure is
// 1; what needs no attachment succeeds with 0.
func TestExitCodes(t *testing.T) {
	state := t.TempDir()
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"show", "bogus"}, exitUsage},
		{[]string{"show"}, exitUsage},
		{[]string{"show", "call", "bogus"}, exitUsage},
		{[]string{"bogus"}, exitUsage},
		{[]string{}, exitUsage},
		{[]string{"completion"}, exitUsage},
		{[]string{"status", "--bogus"}, exitUsage},
		{[]string{"show", "stats", "-o", "yaml"}, exitUsage},
		{[]string{"attach"}, exitUsage},
		{[]string{"attach", "eth0"}, exitUsage},
		{[]string{"validate", "--config"}, exitUsage},
		{[]string{"validate", "--config", "/nonexistent/cac.yaml"}, exitFailed},
		{[]string{"validate", "--config", "../../cac/config/testdata/full.yaml"}, exitOK},
		{[]string{"validate", "../../cac/config/testdata/full.yaml"}, exitOK},
		{[]string{"validate", "../../cac/config/testdata/full.yaml", "--config", "../../cac/config/testdata/full.yaml"}, exitOK},
		{[]string{"version"}, exitOK},
		{[]string{"--version"}, exitOK},
		{[]string{"completion", "bash"}, exitOK},
		{[]string{"s", "stats"}, exitUsage}, // s: show or status
	}
	if os.Geteuid() == 0 { // what reads the pins needs the capabilities
		cases = append(cases, []struct {
			args []string
			want int
		}{
			{[]string{"sh", "call", "adm", "stat", "--state-dir", state}, exitOK}, // IOS abbreviations
			{[]string{"status", "--state-dir", state}, exitDegraded},              // attached to no interface
			{[]string{"show", "limits", "--state-dir", state}, exitFailed},
			{[]string{"show", "fleet", "--state-dir", state}, exitFailed}, // no daemon
			{[]string{"show", "fleet", "extra", "--state-dir", state}, exitUsage},
			{[]string{"clear", "counters", "--state-dir", state}, exitFailed},
		}...)
	}
	for _, c := range cases {
		_, err := run(c.args...)
		if got := exitCode(err); got != c.want {
			t.Errorf("cacctl %s: exit %d (%v), want %d", strings.Join(c.args, " "), got, err, c.want)
		}
	}
}

// TestVersionJSON: version -o json has every key.
func TestVersionJSON(t *testing.T) {
	out, err := run("version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, k := range []string{"version", "commit", "commit_time", "modified", "go_version", "platform"} {
		if _, ok := v[k]; !ok {
			t.Errorf("version -o json has no %q: %s", k, out)
		}
	}
}
