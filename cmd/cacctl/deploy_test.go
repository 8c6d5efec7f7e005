package main

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestUnitCommands: every command line of the systemd unit is one cacctl
// takes, flags and all, so that the unit and the CLI do not drift apart.
func TestUnitCommands(t *testing.T) {
	f, err := os.Open("../../deploy/xdpcac.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, line, ok := strings.Cut(sc.Text(), "=")
		if !ok || !strings.HasPrefix(key, "Exec") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasSuffix(fields[0], "/cacctl") {
			continue
		}
		seen++
		root := newRootCmd()
		cmd, rest, err := root.Find(fields[1:])
		if err != nil || cmd == root {
			t.Errorf("%s: %v", sc.Text(), err)
			continue
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: %v", sc.Text(), err)
		}
		if args := cmd.Flags().Args(); cmd.Args != nil && cmd.Args(cmd, args) != nil {
			t.Errorf("%s: arguments %q refused", sc.Text(), args)
		}
	}
	if seen < 2 {
		t.Errorf("the unit runs cacctl %d times, want ExecStart and ExecReload", seen)
	}
}
