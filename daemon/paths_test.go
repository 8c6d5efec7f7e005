package daemon

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// TestDefaultStateDir: the contract names the loader's default state
// directory, which it may not import.
func TestDefaultStateDir(t *testing.T) {
	if api.DefaultStateDir != loader.DefaultStateDir {
		t.Errorf("api.DefaultStateDir %q, loader.DefaultStateDir %q", api.DefaultStateDir, loader.DefaultStateDir)
	}
}

// ownState is a state directory of the test's, whose daemon directory in
// api.RunDir goes with the test.
func ownState(t *testing.T) (string, api.Paths) {
	t.Helper()
	testenv.RequireRoot(t, "make a directory in "+api.RunDir)
	state := filepath.Join(t.TempDir(), "state")
	p := api.PathsOf(state)
	t.Cleanup(func() {
		os.RemoveAll(p.Dir)
		old := legacyPaths(state)
		for _, f := range []string{old.Lock, old.Socket, old.Agents, old.Fleet} {
			os.Remove(f)
		}
	})
	return state, p
}

// requireMode fails t unless path has mode perm, owner root and group gid.
func requireMode(t *testing.T, path string, perm fs.FileMode, gid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != perm || st.Uid != 0 || int(st.Gid) != gid {
		t.Errorf("%s: mode %v, owner %d:%d; want %v, 0:%d", path, fi.Mode().Perm(), st.Uid, st.Gid, perm, gid)
	}
}

// TestReadGroupOwnDir: the daemon's files are in a directory of its own
// in api.RunDir (which anyone may pass through, and no one but root list),
// root's alone (0700, the socket 0600) until a readers' group is put in
// force: then the group may pass through it (root:GROUP 0710) to the
// socket (root:GROUP 0660), and no further; the lock stays 0600. Taken
// back, both are root's alone again. The socket is 0600 in a 0700
// directory from its bind on, even under a umask of 0.
func TestReadGroupOwnDir(t *testing.T) {
	state, p := ownState(t)
	lk, err := lockDaemon(state)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.unlock()
	fi, err := os.Stat(api.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o711 != 0o711 || perm&0o022 != 0 {
		t.Errorf("%s: mode %v, want 0711 (passable, written by root alone)", api.RunDir, perm)
	}
	requireMode(t, p.Dir, 0o700, 0)
	requireMode(t, p.Lock, 0o600, 0)

	old := unix.Umask(0) // only here, in a test that runs alone
	l, err := listenAPI(p.Socket)
	unix.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if filepath.Dir(filepath.Dir(l.path)) != p.Dir {
		t.Fatalf("bound at %s, not in %s", l.path, p.Dir)
	}
	requireMode(t, filepath.Dir(l.path), 0o700, 0)
	requireMode(t, l.path, 0o600, 0)

	const gid = 65534
	d := New(Config{StateDir: state})
	if err := d.setReadGroup(l.path, gid, "nogroup"); err != nil {
		t.Fatal(err)
	}
	requireMode(t, l.path, 0o660, gid)
	requireMode(t, p.Dir, 0o710, gid)
	if _, err := d.serveAPI(l); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(p.Dir, ".bind")); err == nil {
		t.Errorf("the directory the socket was bound in is left")
	}
	requireMode(t, p.Socket, 0o660, gid)
	requireMode(t, p.Lock, 0o600, 0)
	if gid, name := d.readGroup(); gid != 65534 || name != "nogroup" {
		t.Errorf("the readers' group in force: %d %q", gid, name)
	}

	if err := d.setReadGroup(p.Socket, -1, ""); err != nil {
		t.Fatal(err)
	}
	requireMode(t, p.Socket, 0o600, 0)
	requireMode(t, p.Dir, 0o700, 0)
	if gid, _ := d.readGroup(); gid != -1 {
		t.Errorf("no readers' group, but %d in force", gid)
	}
}

// TestLockOwnDirs: daemons of /a/b and /a_b take a lock each, and a second
// lock of one state directory is refused with the first one's pid.
func TestLockOwnDirs(t *testing.T) {
	testenv.RequireRoot(t, "make a directory in "+api.RunDir)
	base := t.TempDir()
	var locks []*daemonLock
	for _, state := range []string{base + "/a/b", base + "/a_b"} {
		t.Cleanup(func() { os.RemoveAll(api.PathsOf(state).Dir) })
		lk, err := lockDaemon(state)
		if err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		locks = append(locks, lk)
	}
	if locks[0].path == locks[1].path {
		t.Errorf("/a/b and /a_b share %s", locks[0].path)
	}
	if _, err := lockDaemon(base + "/a/b/"); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("a second lock of %s/a/b/: %v", base, err)
	}
	for _, lk := range locks {
		lk.unlock()
	}
}

// TestLockAdoptsLegacy: what a daemon of an earlier version left in
// api.RunDir itself moves into the daemon's directory (the agents'
// statuses, the fleet's size) or goes (its lock, its socket); while it
// still holds its lock, the lock is refused; RemoveStaleFiles then leaves
// nothing, of either naming.
func TestLockAdoptsLegacy(t *testing.T) {
	state, p := ownState(t)
	if err := makeRunDirs(p.Dir); err != nil {
		t.Fatal(err)
	}
	old := legacyPaths(state)
	if !strings.HasPrefix(filepath.Base(old.Lock), "api_") || filepath.Dir(old.Lock) != api.RunDir {
		t.Fatalf("the old naming: %s", old.Lock)
	}
	for f, body := range map[string]string{old.Lock: "4242\n", old.Socket: "", old.Agents: "[]", old.Fleet: `{"fleet":"f"}`} {
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.Open(old.Lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := lockDaemon(state); err == nil || !strings.Contains(err.Error(), "earlier version") || !strings.Contains(err.Error(), "4242") {
		t.Errorf("an earlier daemon holds its lock: %v", err)
	}
	if !exists(old.Agents) {
		t.Errorf("a refused lock moved the earlier daemon's statuses")
	}
	held.Close()

	lk, err := lockDaemon(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{old.Lock, old.Socket, old.Agents, old.Fleet} {
		if exists(f) {
			t.Errorf("%s is left", f)
		}
	}
	if b, err := os.ReadFile(p.Fleet); err != nil || string(b) != `{"fleet":"f"}` {
		t.Errorf("the fleet's size: %q, %v", b, err)
	}
	if !exists(p.Agents) {
		t.Errorf("the agents' statuses did not move")
	}
	lk.unlock()

	RemoveStaleFiles(state)
	if exists(p.Dir) {
		entries, _ := os.ReadDir(p.Dir)
		t.Errorf("RemoveStaleFiles left %s: %v", p.Dir, entries)
	}
	// Of the old naming alone, too.
	if err := os.WriteFile(old.Agents, []byte("[]"), 0o600); err != nil {
		t.Fatal(err)
	}
	RemoveStaleFiles(state)
	if exists(old.Agents, p.Dir) {
		t.Errorf("RemoveStaleFiles left files of the old naming")
	}
}
