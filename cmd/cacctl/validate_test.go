package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/daemon"
)

// TestMain lets the tests run this binary as cacctl itself, to see the
// exit status and what main prints.
func TestMain(m *testing.M) {
	setUp()
	if os.Getenv("XDPCAC_TEST_AS_CACCTL") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// cacctl runs the test binary as cacctl with args.
func cacctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "XDPCAC_TEST_AS_CACCTL=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// firstLine is what the first line of a testdata file says after "# key: ".
func firstLine(t *testing.T, path, key string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimPrefix(line, "# "+key+": ")
}

// TestValidateRefusedFiles: cacctl validate exits 1 on every file of the
// config package's refusals, naming the file:line:column: key the file
// gives, and on an empty file and one of 50,000 accounts. How long each
// took is logged: that the count comes before the pairwise checks, which
// keeps the big file quick, is the config package's to test.
func TestValidateRefusedFiles(t *testing.T) {
	files, _ := filepath.Glob("../../cac/config/testdata/refused/*.yaml")
	if len(files) == 0 {
		t.Fatal("no refused files")
	}
	want := map[string]string{}
	for _, f := range files {
		want[f] = f + ":" + firstLine(t, f, "refused")
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	big := filepath.Join(dir, "accounts.yaml")
	os.WriteFile(empty, nil, 0o600)
	os.WriteFile(big, accountsFile(50000), 0o600)
	want[empty] = empty + ":1:1: (document): holds no keys"
	want[big] = big + ":4103:9: customers[1].accounts[2047]: 50000 accounts: the fast path holds at most 4096"
	for f, w := range want {
		start := time.Now()
		stdout, stderr, code := cacctl(t, "validate", "--config", f)
		if code != 1 || !strings.HasPrefix(stderr, "cacctl: ") || !strings.Contains(stderr, w) || stdout != "" {
			t.Errorf("validate %s: exit %d\nstdout %s\nstderr %s\nwant   %s", filepath.Base(f), code, stdout, stderr, w)
		}
		t.Logf("validate %s: %v", filepath.Base(f), time.Since(start).Round(time.Millisecond))
	}
}

// accountsFile is a file of n accounts, 2,049 to a customer.
func accountsFile(n int) []byte {
	var b strings.Builder
	b.WriteString("interfaces: [{name: eth1}]\ncustomers:\n")
	for i := 0; i < n; i++ {
		if i%2049 == 0 {
			fmt.Fprintf(&b, "  - name: c%d\n    accounts:\n", i/2049)
		}
		fmt.Fprintf(&b, "      - {name: a%d, source: 10.%d.%d.0/24}\n", i, i>>8&0xff, i&0xff)
	}
	return []byte(b.String())
}

// TestValidateIOSForms: cacctl validate accepts every pasted form of the
// config package's IOS files and prints the lines each comes to.
func TestValidateIOSForms(t *testing.T) {
	files, _ := filepath.Glob("../../cac/config/testdata/ios/*.yaml")
	if len(files) == 0 {
		t.Fatal("no IOS files")
	}
	for _, f := range files {
		stdout, stderr, code := cacctl(t, "validate", "--config", f)
		want := "  " + strings.ReplaceAll(firstLine(t, f, "lines"), " | ", "\n  ") + "\n"
		if code != 0 || !strings.Contains(stdout, ": valid (") || !strings.HasSuffix(stdout, want) {
			t.Errorf("validate %s: exit %d\nstdout %s\nstderr %s\nwant lines\n%s", filepath.Base(f), code, stdout, stderr, want)
		}
	}
}

// TestCheckInterfaces: a file none of whose interfaces exist is refused,
// and one with some is let through with a warning naming the others.
func TestCheckInterfaces(t *testing.T) {
	cfgOf := func(names ...string) *config.Config {
		c := &config.Config{File: "c.yaml"}
		for _, n := range names {
			c.Interfaces = append(c.Interfaces, config.Interface{Name: n})
		}
		return c
	}
	var w bytes.Buffer
	err := daemon.CheckInterfaces(&w, "", cfgOf("nosuch0", "nosuch1"))
	if err == nil || err.Error() != "c.yaml: none of its interfaces exist (nosuch0, nosuch1): nothing changed" {
		t.Errorf("none exist: %v", err)
	}
	w.Reset()
	if err := daemon.CheckInterfaces(&w, "", cfgOf("lo", "nosuch0")); err != nil || w.String() != "warning: c.yaml: interfaces that do not exist: nosuch0\n" {
		t.Errorf("some exist: %v, %q", err, w.String())
	}
}

// TestApplyRefusesMissingInterfaces: apply of a file naming only
// interfaces that do not exist changes nothing and says why.
func TestApplyRefusesMissingInterfaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("apply needs root before it reads the file")
	}
	path := filepath.Join(t.TempDir(), "cac.yaml")
	os.WriteFile(path, []byte("interfaces: [{name: nosuch0}]\nclasses: {sip-invite: {cps: 1}}\n"), 0o600)
	out, err := run("apply", "--config", path, "--state-dir", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "none of its interfaces exist (nosuch0): nothing changed") || strings.Contains(out, "applied") {
		t.Errorf("apply: %v\n%s", err, out)
	}
}
