package deb

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkDocs holds the man pages and the bash completion the package
// installed under root to what Debian policy and the unit expect: every
// page gzipped without a name or time (gzip -n), cacctl(1) a man page
// that names the command, read with man when the machine has it and
// always by gunzipping it, and the completion where bash-completion
// looks for it.
func checkDocs(t *testing.T, root string) {
	t.Helper()
	man1 := filepath.Join(root, "usr/share/man/man1")
	pages, err := filepath.Glob(filepath.Join(man1, "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Errorf("%d man pages in usr/share/man/man1, want one for each command", len(pages))
	}
	for _, p := range pages {
		checkPage(t, p)
	}

	page := filepath.Join(man1, "cacctl.1.gz")
	text := gunzip(t, page)
	for _, want := range []string{`.TH "CACCTL" "1"`, "cacctl - Call admission control", "cacctl-run(1)"} {
		if !strings.Contains(text, want) {
			t.Errorf("cacctl.1 lacks %q:\n%.600s", want, text)
		}
	}
	if path, err := exec.LookPath("man"); err != nil {
		t.Logf("man not found (Debian package man-db): cacctl.1 checked by gunzip alone")
	} else {
		cmd := exec.Command(path, "-P", "cat", "-l", page)
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "LC_ALL=C.UTF-8")
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), "cacctl - Call admission control at the NIC") {
			t.Errorf("man -l %s: %v\n%s%s", page, err, out, stderr(err))
		}
	}

	comp := filepath.Join(root, "usr/share/bash-completion/completions/cacctl")
	if fi, err := os.Stat(comp); err != nil || fi.Mode() != 0o644 {
		t.Errorf("bash completion %s: %v, %v", comp, fi, err)
	} else if b, err := os.ReadFile(comp); err != nil || !strings.Contains(string(b), "__start_cacctl") {
		t.Errorf("bash completion %s does not complete cacctl: %v\n%.300s", comp, err, b)
	}

	unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/xdpcac.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nDocumentation=man:cacctl(1)") || strings.Contains(string(unit), "/etc/systemd/system") {
		t.Errorf("the unit should name its man page and no hand install:\n%.800s", unit)
	}
}

// checkPage holds one installed man page to Debian's form: mode 0644, a
// .gz that gzip -n wrote.
func checkPage(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if !strings.HasSuffix(path, ".1.gz") || fi.Mode() != 0o644 {
		t.Errorf("%s: mode %v, want a .1.gz of mode 0644", path, fi.Mode())
		return
	}
	hdr, _, err := readGzip(path)
	if err != nil {
		t.Error(err)
		return
	}
	if hdr.Name != "" || !hdr.ModTime.IsZero() {
		t.Errorf("%s: gzip header holds name %q, time %v: want gzip -n", path, hdr.Name, hdr.ModTime)
	}
}

// gunzip is the text of a gzipped file.
func gunzip(t *testing.T, path string) string {
	t.Helper()
	_, text, err := readGzip(path)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// readGzip is a gzipped file's header and text.
func readGzip(path string) (gzip.Header, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return gzip.Header{}, "", err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return gzip.Header{}, "", fmt.Errorf("%s: %w", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return gzip.Header{}, "", fmt.Errorf("%s: %w", path, err)
	}
	return z.Header, string(b), nil
}
