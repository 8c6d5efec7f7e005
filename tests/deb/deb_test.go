package deb

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// pkg is the package under test: XDPCAC_DEB's, or one built by
// deploy/debian/build.sh. The build keeps the environment's CGO and the
// test's paths so that it reuses what go test compiled; make deb's own
// build (static, -trimpath) is tested by passing its file in XDPCAC_DEB
// (XDPCAC_DEB=$(ls dist/*.deb) from the top of the checkout).
func pkg(t *testing.T) string {
	t.Helper()
	if deb := os.Getenv("XDPCAC_DEB"); deb != "" {
		// A relative path is from the top of the checkout, where make
		// deb writes dist/, not from this package's directory.
		if !filepath.IsAbs(deb) {
			deb = filepath.Join("../..", deb)
		}
		return deb
	}
	for _, tool := range []string{"dpkg-deb", "file", "ldd", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	cgo, err := exec.Command("go", "env", "CGO_ENABLED").Output()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "../../deploy/debian/build.sh", t.TempDir())
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+strings.TrimSpace(string(cgo)), "DEB_GOFLAGS=")
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, stderr(err))
	}
	t.Logf("built %s in %v", strings.TrimSpace(string(out)), time.Since(start).Round(time.Millisecond))
	return strings.TrimSpace(string(out))
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// field is one field of the package's control file.
func field(t *testing.T, deb, name string) string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", "--field", deb, name).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --field %s: %v\n%s", name, err, stderr(err))
	}
	return strings.TrimSpace(string(out))
}

// newRoot is an empty dpkg root: the database dpkg wants, nothing else
// but the libc6 a dynamic cacctl depends on, taken from the machine's
// own database so that Depends is resolved, not forced.
func newRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	admin := filepath.Join(root, "var/lib/dpkg")
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status, err := exec.Command("dpkg-query", "-W", "-f",
		"Package: ${Package}\nStatus: install ok installed\nVersion: ${Version}\nArchitecture: ${Architecture}\nMaintainer: ${Maintainer}\nDescription: ${binary:Summary}\n\n",
		"libc6").Output()
	if err != nil {
		t.Fatalf("dpkg-query libc6: %v", err)
	}
	for name, body := range map[string][]byte{"status": status, "available": nil} {
		if err := os.WriteFile(filepath.Join(admin, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestInstall: the package installs into a fresh root with its files in
// place and their modes, cac.yaml a conffile, the unit running the
// packaged binary, and the installed cacctl runs and accepts the
// packaged configuration; removing it leaves the conffile, purging does
// not.
func TestInstall(t *testing.T) {
	testenv.RequireRoot(t, "dpkg installs into a root of its own as root")
	deb := pkg(t)
	ver := field(t, deb, "Version")
	if !strings.HasPrefix(filepath.Base(deb), "xdpcac_"+ver+"_") || strings.ContainsAny(ver, "- ") {
		t.Errorf("file %s, version %q: want xdpcac_VERSION_ARCH.deb, a version without a revision", deb, ver)
	}
	root := newRoot(t)
	dpkg := func(args ...string) {
		t.Helper()
		cmd := exec.Command("dpkg", append([]string{"--root=" + root, "--log=/dev/null"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	dpkg("-i", deb)

	cacctl := filepath.Join(root, "usr/sbin/cacctl")
	for path, mode := range map[string]fs.FileMode{
		"usr/sbin/cacctl":                              0o755,
		"lib/systemd/system/xdpcac.service":            0o644,
		"etc/xdpcac/cac.yaml":                          0o644,
		"usr/share/xdpcac/xdpcac-alerts.yml":           0o644,
		"usr/share/xdpcac/grafana-dashboard.json":      0o644,
		"usr/share/doc/xdpcac/copyright":               0o644,
		"usr/share/man/man1/cacctl.1.gz":               0o644,
		"usr/share/bash-completion/completions/cacctl": 0o644,
	} {
		fi, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), mode)
		}
	}
	unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/xdpcac.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart=/usr/sbin/cacctl run ") || strings.Contains(string(unit), "/usr/local/sbin") {
		t.Errorf("the unit does not run /usr/sbin/cacctl:\n%s", unit)
	}
	checkDocs(t, root)
	conffiles, err := os.ReadFile(filepath.Join(root, "var/lib/dpkg/info/xdpcac.conffiles"))
	if err != nil || strings.TrimSpace(string(conffiles)) != "/etc/xdpcac/cac.yaml" {
		t.Errorf("conffiles %q, %v", conffiles, err)
	}

	// Depends: libc6 exactly when the binary is dynamic.
	desc, err := exec.Command("file", "-b", cacctl).Output()
	if err != nil {
		t.Fatal(err)
	}
	static := strings.Contains(string(desc), "statically linked")
	if dep := field(t, deb, "Depends"); static != (dep == "") || !static && dep != "libc6" {
		t.Errorf("Depends %q for a binary that is %s", dep, strings.TrimSpace(string(desc)))
	}

	if out, err := exec.Command(cacctl, "version").Output(); err != nil || !strings.HasPrefix(string(out), "cacctl ") {
		t.Errorf("cacctl version: %v: %q\n%s", err, out, stderr(err))
	}
	cfg := filepath.Join(root, "etc/xdpcac/cac.yaml")
	if out, err := exec.Command(cacctl, "validate", "--config", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "valid") {
		t.Errorf("cacctl validate --config %s: %v\n%s", cfg, err, out)
	}

	dpkg("--remove", "xdpcac")
	if _, err := os.Stat(cacctl); !os.IsNotExist(err) {
		t.Errorf("cacctl left after remove: %v", err)
	}
	if _, err := os.Stat(cfg); err != nil {
		t.Errorf("remove took the conffile: %v", err)
	}
	dpkg("--purge", "xdpcac")
	if _, err := os.Stat(cfg); !os.IsNotExist(err) {
		t.Errorf("cac.yaml left after purge: %v", err)
	}
}
