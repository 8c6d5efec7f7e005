package daemon

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// asUser runs the built cacctl as uid and gid with no other group and no
// capability, as a NOC login would, and returns its output and error.
func asUser(t *testing.T, tb *harness.Testbed, uid, gid string, args ...string) (string, error) {
	t.Helper()
	argv := append([]string{"--reuid=" + uid, "--regid=" + gid, "--clear-groups", "--inh-caps=-all", "--",
		harness.CacctlBin, "--state-dir", tb.State}, args...)
	var out bytes.Buffer
	cmd := exec.Command("setpriv", argv...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestReadOnlyGroup: with api.read-group, a member of the group with no
// capability runs show, status and top --once through the daemon and
// sees what root sees; apply and detach are refused, over the API too;
// someone outside the group is refused everything.
func TestReadOnlyGroup(t *testing.T) {
	testenv.RequireTool(t, "setpriv", "util-linux")
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skipf("no group nogroup on this box: %v", err)
	}
	outsider, err := user.LookupGroup("users")
	if err != nil {
		t.Skipf("no group users on this box: %v", err)
	}
	// The built binary's directory, for a user who is not root.
	if err := os.Chmod(filepath.Dir(harness.CacctlBin), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\ncpu: {sample-interval: 200ms}\n"+
		"classes: {pppoe-padi: {cps: 10}}\napi: {read-group: nogroup}\n")
	tb.StartDaemon(t, cfg)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "stats"}, "pppoe-padi"},
		{[]string{"show", "stats", "-o", "json"}, `"classes"`},
		{[]string{"status"}, "daemon: running"},
		{[]string{"show", "limits"}, "10/s"},
		{[]string{"show", "call", "admission", "statistics"}, "Call Admission Control"},
		{[]string{"top", "--once"}, "pppoe-padi"},
	} {
		out, err := asUser(t, tb, "65534", g.Gid, c.args...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("a reader's %s: %v\n%s", strings.Join(c.args, " "), err, out)
		}
		root, _, _ := tb.Cacctl(t, c.args...)
		if strings.Join(c.args, " ") == "show stats -o json" && out != root {
			t.Errorf("a reader sees another show stats -o json than root:\n%s\nroot:\n%s", out, root)
		}
	}
	for _, args := range [][]string{{"apply", "--config", cfg}, {"detach", tb.BoxIface}} {
		if out, err := asUser(t, tb, "65534", g.Gid, args...); err == nil {
			t.Errorf("a reader's %s succeeded:\n%s", strings.Join(args, " "), out)
		}
	}
	if out, err := asUser(t, tb, "65534", outsider.Gid, "show", "stats"); err == nil {
		t.Errorf("someone outside the group read the stats:\n%s", out)
	}
	// Still attached and in force: nothing a reader did changed anything.
	if out, _, err := tb.Cacctl(t, "status"); harness.StatusErr(err) != nil || !strings.Contains(out, tb.BoxIface) {
		t.Errorf("after the readers: %v\n%s", err, out)
	}
}

// TestReadGroupOwnDirs: each daemon's socket is in a directory of its
// own in /run/xdpcac (0711), whose mode that daemon alone sets: with
// api.read-group root:GROUP 0710 around a root:GROUP 0660 socket, its
// other files 0600. A second daemon that takes its readers' group back
// (0700, 0600) leaves the first one's readers as they were.
func TestReadGroupOwnDirs(t *testing.T) {
	testenv.RequireTool(t, "setpriv", "util-linux")
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skipf("no group nogroup on this box: %v", err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	if err := os.Chmod(filepath.Dir(harness.CacctlBin), 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(tb *harness.Testbed, extra string) string {
		return harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\ncpu: {sample-interval: 200ms}\n"+
			"classes: {pppoe-padi: {cps: 10}}\n"+extra)
	}
	first, second := harness.NewTestbed(t), harness.NewTestbed(t)
	first.StartDaemon(t, config(first, "api: {read-group: nogroup}\n"))
	second.StartDaemon(t, config(second, "api: {read-group: nogroup}\n"))

	mode := func(path string, perm fs.FileMode, group int) {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Error(err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != perm || st.Uid != 0 || int(st.Gid) != group {
			t.Errorf("%s: mode %v, owner %d:%d; want %v, 0:%d", path, fi.Mode().Perm(), st.Uid, st.Gid, perm, group)
		}
	}
	mode(api.RunDir, 0o711, 0)
	for _, tb := range []*harness.Testbed{first, second} {
		p := api.PathsOf(tb.State)
		if filepath.Dir(p.Dir) != api.RunDir || filepath.Dir(p.Socket) != p.Dir {
			t.Fatalf("the daemon's files: %+v", p)
		}
		mode(p.Dir, 0o710, gid)
		mode(p.Socket, 0o660, gid)
		mode(p.Lock, 0o600, 0)
	}
	if api.PathsOf(first.State).Dir == api.PathsOf(second.State).Dir {
		t.Fatalf("two daemons share %s", api.PathsOf(first.State).Dir)
	}

	if _, stderr, err := second.Cacctl(t, "apply", "--config", config(second, "")); err != nil {
		t.Fatalf("apply without a readers' group: %v: %s", err, stderr)
	}
	p := api.PathsOf(second.State)
	mode(p.Dir, 0o700, 0)
	mode(p.Socket, 0o600, 0)
	mode(api.RunDir, 0o711, 0)
	if out, err := asUser(t, second, "65534", g.Gid, "status"); err == nil {
		t.Errorf("a reader of a daemon that took its group back:\n%s", out)
	}
	if out, err := asUser(t, first, "65534", g.Gid, "status"); err != nil || !strings.Contains(out, "daemon: running") {
		t.Errorf("a reader of the first daemon, after the second took its group back: %v\n%s", err, out)
	}
}
