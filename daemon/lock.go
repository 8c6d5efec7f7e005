package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
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

// lockDaemon takes the daemon lock of stateDir, or says which process
// holds it.
func lockDaemon(stateDir string) (*daemonLock, error) {
	path := api.PathsOf(stateDir).Lock
	for {
		f, err := openOwn(path, os.O_RDWR|os.O_CREATE)
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

// unlock removes the lock file, and then drops the lock: while a daemon
// runs there is a lock file, and none is left when it stops.
func (l *daemonLock) unlock() {
	os.Remove(l.path)
	l.f.Close()
}

// RemoveStaleFiles removes the lock file of the daemon of stateDir
// that is not running, and the statuses it kept of the session agents and
// the size of its fleet, once nothing is attached: what `cacctl detach` of the last interface
// leaves behind is nothing.
func RemoveStaleFiles(stateDir string) {
	paths := api.PathsOf(stateDir)
	_, lerr := os.Lstat(paths.Lock)
	_, aerr := os.Lstat(paths.Agents)
	_, ferr := os.Lstat(paths.Fleet)
	if errors.Is(lerr, os.ErrNotExist) && errors.Is(aerr, os.ErrNotExist) && errors.Is(ferr, os.ErrNotExist) {
		return // and no lock is made to find that out
	}
	lk, err := lockDaemon(stateDir)
	if err != nil {
		return // a daemon runs, or there is nothing to lock
	}
	os.Remove(paths.Agents)
	os.Remove(paths.Fleet)
	lk.unlock()
}
