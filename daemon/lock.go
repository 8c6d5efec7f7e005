package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xdpcac/xdpcac/api"
	"golang.org/x/sys/unix"
)

// daemonLock is held by `cacctl run` for as long as it runs.
type daemonLock struct {
	f    *os.File
	path string
}

// makeRunDirs makes api.RunDir (0711: anyone may pass through it, no one
// but root may list it) and the daemon's own directory in it (0700) when
// they are missing, and refuses either when it is a link, another user's,
// or writable by others. A RunDir made 0700 before is opened to 0711:
// what guards a daemon's files is its own directory, whose mode only it
// sets (setReadGroup), never the one every daemon shares (docs/design.md,
// "Files").
func makeRunDirs(own string) error {
	if err := os.Mkdir(api.RunDir, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", api.RunDir, err)
	}
	if err := checkOwnDir(api.RunDir); err != nil {
		return err
	}
	fi, err := os.Stat(api.RunDir)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o011 != 0o011 { // the umask's, or made so before
		if err := os.Chmod(api.RunDir, perm|0o711); err != nil {
			return fmt.Errorf("let readers pass through %s: %w", api.RunDir, err)
		}
	}
	return ownDir(own)
}

// lockDaemon takes the daemon lock of stateDir, or says which process
// holds it.
func lockDaemon(stateDir string) (*daemonLock, error) {
	paths := api.PathsOf(stateDir)
	path := paths.Lock
	for tries := 0; ; tries++ {
		if err := makeRunDirs(paths.Dir); err != nil {
			return nil, fmt.Errorf("daemon lock: %w", err)
		}
		f, err := openOwn(path, os.O_RDWR|os.O_CREATE)
		if errors.Is(err, os.ErrNotExist) && tries < 100 {
			continue // its directory removed since (RemoveStaleFiles): again
		}
		if err != nil {
			return nil, fmt.Errorf("open daemon lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid, _ := io.ReadAll(f)
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("cacctl run is already running for %s (pid %s, lock %s): stop it first; nothing was changed",
					stateDir, strings.TrimSpace(string(pid)), path)
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !stillAt(f, path) {
			f.Close() // removed by the daemon before, which held it: again
			continue
		}
		if err := adoptLegacy(stateDir, paths); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &daemonLock{f: f, path: path}, nil
	}
}

// stillAt reports whether the file f locked is still the one at path: its
// holder removes it before it lets go, so one locked after that is gone.
func stillAt(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(held, now)
}

// unlock removes the lock file, and its directory when nothing else is
// in it, and then drops the lock: while a daemon runs there is a lock
// file, and none is left when it stops. A lockDaemon that made the
// directory just before finds it gone, and makes it again.
func (l *daemonLock) unlock() {
	os.Remove(l.path)
	os.Remove(filepath.Dir(l.path))
	l.f.Close()
}

// legacyPaths are the files a daemon of stateDir kept in api.RunDir itself
// before each daemon had a directory of its own: api.lock, api.sock,
// api.agents.json and api.fleet.json for the default state directory,
// "api" followed by the path with "/" turned into "_" for another.
func legacyPaths(stateDir string) api.Paths {
	name := "api"
	if filepath.Clean(stateDir) != api.DefaultStateDir {
		name = "api" + strings.ReplaceAll(filepath.Clean(stateDir), "/", "_")
	}
	base := filepath.Join(api.RunDir, name)
	return api.Paths{Dir: api.RunDir, Lock: base + ".lock", Socket: base + ".sock", Agents: base + ".agents.json", Fleet: base + ".fleet.json"}
}

// exists reports whether anything is at one of paths.
func exists(paths ...string) bool {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// adoptLegacy takes over what a daemon of stateDir of an earlier version
// left in api.RunDir, under its lock and the new one: the agents'
// statuses and the fleet's size move into paths (unless there are newer
// ones), and the rest is removed. An earlier daemon that still holds its
// lock refuses the lock.
func adoptLegacy(stateDir string, paths api.Paths) error {
	old := legacyPaths(stateDir)
	if !exists(old.Lock, old.Socket, old.Agents, old.Fleet) {
		return nil
	}
	if exists(old.Lock) {
		f, err := openOwn(old.Lock, os.O_RDWR)
		if err != nil {
			return fmt.Errorf("the lock of an earlier version: %w", err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid, _ := io.ReadAll(f)
			return fmt.Errorf("cacctl run of an earlier version is running for %s (pid %s, lock %s): stop it first; nothing was changed",
				stateDir, strings.TrimSpace(string(pid)), old.Lock)
		}
	}
	for from, to := range map[string]string{old.Agents: paths.Agents, old.Fleet: paths.Fleet} {
		if !exists(to) {
			os.Rename(from, to)
		}
	}
	for _, p := range []string{old.Agents, old.Fleet, old.Agents + ".tmp", old.Fleet + ".tmp", old.Socket, old.Lock} {
		os.Remove(p)
	}
	return nil
}

// RemoveStaleFiles removes the directory of the daemon of stateDir that
// is not running: its lock file, the statuses it kept of the session
// agents and the size of its fleet, and the socket of one that was killed,
// and what a daemon of an earlier version left in api.RunDir itself, once
// nothing is attached: what `cacctl detach` of the last interface leaves
// behind is nothing.
func RemoveStaleFiles(stateDir string) {
	paths := api.PathsOf(stateDir)
	old := legacyPaths(stateDir)
	if !exists(paths.Dir, old.Lock, old.Socket, old.Agents, old.Fleet) {
		return // and no lock is made to find that out
	}
	lk, err := lockDaemon(stateDir)
	if err != nil {
		return // a daemon runs, or there is nothing to lock
	}
	for _, p := range []string{paths.Agents, paths.Fleet, paths.Agents + ".tmp", paths.Fleet + ".tmp", paths.Socket} {
		os.Remove(p)
	}
	os.RemoveAll(bindDir(paths.Socket))
	lk.unlock()
}
