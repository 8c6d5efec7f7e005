package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultStateDir is where attachments keep their pins unless told otherwise.
const DefaultStateDir = "/sys/fs/bpf/xdpcac"

const bpffsRoot = "/sys/fs/bpf"

func isBPFFS(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false, err
	}
	return st.Type == unix.BPF_FS_MAGIC, nil
}

// ensureStateDir makes sure dir exists on a bpffs, mounting bpffs on
// /sys/fs/bpf when dir lies below it and nothing is mounted there yet.
func ensureStateDir(dir string) error {
	dir = filepath.Clean(dir)
	if strings.HasPrefix(dir+"/", bpffsRoot+"/") {
		ok, err := isBPFFS(bpffsRoot)
		if err != nil {
			return fmt.Errorf("look at %s: %w", bpffsRoot, err)
		}
		if !ok {
			if err := unix.Mount("bpf", bpffsRoot, "bpf", 0, "mode=0700"); err != nil {
				return fmt.Errorf("mount bpffs on %s: %w", bpffsRoot, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	ok, err := isBPFFS(dir)
	if err != nil {
		return fmt.Errorf("look at state directory: %w", err)
	}
	if !ok {
		return fmt.Errorf("state directory %s is not on a bpffs: mount one there (mount -t bpf bpf DIR) or pick a directory below %s", dir, bpffsRoot)
	}
	return nil
}

// lock is an exclusive flock on the state directory, held by every command
// that changes it.
type lock struct{ f *os.File }

// errStateDirGone is what lockStateDir says when the directory it locked
// was removed meanwhile: the last detach removes the state directory, and
// a command that waited for its lock holds a lock on nothing.
var errStateDirGone = errors.New("the state directory was removed while waiting for its lock")

// errLockBusy is what lockStateDir says when another command kept the lock
// for all of the timeout.
var errLockBusy = errors.New("another cacctl holds the lock")

// lockStateDir waits up to timeout for the lock on dir.
func lockStateDir(dir string, timeout time.Duration) (*lock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open state directory for locking: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w on %s", errLockBusy, dir)
			}
			return nil, fmt.Errorf("lock state directory: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	held, herr := f.Stat()
	now, nerr := os.Stat(dir)
	if herr != nil || nerr != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, fmt.Errorf("%s: %w", dir, errStateDirGone)
	}
	return &lock{f}, nil
}

// ensureAndLock makes the state directory and locks it, making it again
// when a detach removed it while this command waited.
func ensureAndLock(dir string, timeout time.Duration) (*lock, error) {
	for tries := 0; ; tries++ {
		if err := ensureStateDir(dir); err != nil {
			return nil, err
		}
		lk, err := lockStateDir(dir, timeout)
		if errors.Is(err, errStateDirGone) && tries < 3 {
			continue
		}
		return lk, err
	}
}

func (l *lock) unlock() { l.f.Close() } // closing the file drops the flock

// removeIfEmpty removes the state directory once its last attachment is
// gone, under its lock, so that a detach leaves nothing behind. A
// directory that still holds something, or is a mount point, stays.
func removeIfEmpty(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) > 0 {
		return
	}
	os.Remove(dir) // EBUSY for a bpffs mounted right there: it stays
}
