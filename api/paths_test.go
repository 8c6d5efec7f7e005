package api

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
)

// TestPathsOf: every way of writing one directory names the same files,
// and different directories never do, /a/b and /a_b among them; the
// default's socket is /run/xdpcac/sys-fs-bpf-xdpcac/api.sock.
func TestPathsOf(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dirs []string // one directory, written each way
		name string   // its directory in RunDir
	}{
		{[]string{DefaultStateDir, DefaultStateDir + "/", "/sys//fs/bpf/xdpcac", "/sys/fs/bpf/./xdpcac"}, "sys-fs-bpf-xdpcac"},
		{[]string{"/a/b", "/a/b/", "/a/b//", "/a/c/../b"}, "a-b"},
		{[]string{"/a_b", "/a_b/"}, "a_b"},
		{[]string{"/a-b"}, `a\x2db`},
		{[]string{"/a/-b"}, `a-\x2db`},
		{[]string{"/a\\x2db"}, `a\x5cx2db`},
		{[]string{"/a b"}, `a\x20b`},
		{[]string{"/.a/.b"}, `\x2ea-.b`},
		{[]string{"/"}, "-"},
		{[]string{"rel", "./rel", filepath.Join(wd, "rel")}, escapePath(filepath.Join(wd, "rel"))},
	} {
		for _, d := range c.dirs {
			p := PathsOf(d)
			want := filepath.Join(RunDir, c.name)
			if p.Dir != want || p.Socket != want+"/api.sock" || p.Lock != want+"/lock" ||
				p.Agents != want+"/agents.json" || p.Fleet != want+"/fleet.json" {
				t.Errorf("PathsOf(%q) = %+v, want its files in %s", d, p, want)
			}
		}
	}
	if got := PathsOf(DefaultStateDir).Socket; got != "/run/xdpcac/sys-fs-bpf-xdpcac/api.sock" {
		t.Errorf("the default's socket: %s", got)
	}
	seen := map[string]string{}
	for _, d := range []string{"/a/b", "/a_b", "/a-b", "/a/-b", "/a-/b", "/a\\x2db", "/ab", "/a", "/", "/-", DefaultStateDir,
		"/sys/fs/bpf/xdpcac-b", "/sys/fs/bpf/xdpcac/b", "/sys/fs/bpf/xdpcac_b", "/.a", "/\\x2ea"} {
		dir := PathsOf(d).Dir
		if other, ok := seen[dir]; ok {
			t.Errorf("%s and %s share %s", d, other, dir)
		}
		seen[dir] = d
	}
}

// unescape undoes escapePath: each name has one path, so no two paths
// share a name.
func unescape(t *testing.T, name string) string {
	if name == "-" {
		return "/"
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '-':
			b.WriteByte('/')
		case c == '\\':
			n, err := strconv.ParseUint(name[i+2:i+4], 16, 8)
			if err != nil || name[i+1] != 'x' {
				t.Fatalf("%q: bad escape at %d", name, i)
			}
			b.WriteByte(byte(n))
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return "/" + b.String()
}

// TestEscapeOneToOne: any clean absolute path comes back from its name.
func TestEscapeOneToOne(t *testing.T) {
	f := func(parts []string) bool {
		p := filepath.Clean("/" + strings.Join(parts, "/"))
		return unescape(t, escapePath(p)) == p
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

// TestEscapeAsSystemd: the names are systemd-escape --path's, which an
// operator can work out.
func TestEscapeAsSystemd(t *testing.T) {
	if _, err := exec.LookPath("systemd-escape"); err != nil {
		t.Skip("no systemd-escape here")
	}
	for _, p := range []string{DefaultStateDir, "/a/b", "/a_b", "/a-b", "/a b", "/.a/.b", "/", "/a:b.c", "/ä", "/a\\b", "/a%b~c"} {
		out, err := exec.Command("systemd-escape", "--path", p).Output()
		if err != nil {
			t.Fatalf("systemd-escape --path %s: %v", p, err)
		}
		if got, want := escapePath(p), strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: %q, systemd-escape says %q", p, got, want)
		}
	}
}
