package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
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

// TestGenDocs: gen-docs writes a man page for every command the unit's
// Documentation= names and none for itself, dated by SOURCE_DATE_EPOCH
// so that a package build is repeatable, and a bash completion of cacctl.
func TestGenDocs(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000") // November 2023
	t.Setenv("TZ", "UTC")
	dir := t.TempDir()
	root := newRootCmd()
	root.SetArgs([]string{"gen-docs", dir})
	if err := root.Execute(); err != nil {
		t.Fatalf("gen-docs: %v", err)
	}
	unit, err := os.ReadFile("../../deploy/xdpcac.service")
	if err != nil {
		t.Fatal(err)
	}
	pages := regexp.MustCompile(`man:([a-z-]+)\(1\)`).FindAllStringSubmatch(string(unit), -1)
	if len(pages) == 0 {
		t.Error("the unit's Documentation= names no man page")
	}
	for _, m := range pages {
		page, err := os.ReadFile(filepath.Join(dir, "man1", m[1]+".1"))
		if err != nil {
			t.Errorf("the unit names %s: %v", m[0], err)
			continue
		}
		if !strings.Contains(string(page), `"Nov 2023"`) {
			t.Errorf("%s.1 is not dated by SOURCE_DATE_EPOCH:\n%.300s", m[1], page)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "man1", "cacctl-gen-docs.1")); !os.IsNotExist(err) {
		t.Errorf("the hidden gen-docs has a man page: %v", err)
	}
	comp, err := os.ReadFile(filepath.Join(dir, "bash-completion", "cacctl"))
	if err != nil || !strings.Contains(string(comp), "complete -o default -F __start_cacctl cacctl") {
		t.Errorf("bash completion: %v\n%.300s", err, comp)
	}
}
