package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Every file the daemon and cacctl write (the rejects log, the session
// agents' statuses, the daemon's lock) is opened with O_NOFOLLOW, in a
// directory that is no symbolic link, is owned by this user and that no
// other may write to: a link planted there by another user could
// otherwise make root append to, truncate or lock a file of the planter's
// choosing (docs/design.md, "Files").

// ownDir makes dir (mode 0700) when it is missing, and refuses one that is
// a symbolic link, is another user's, or that group or others may write.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return checkOwnDir(dir)
}

// checkOwnDir refuses a directory that is a symbolic link, is another
// user's, or that group or others may write.
func checkOwnDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("look at %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: refusing to write through it; make it a directory of its own", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to this user (%d): refusing to write in it", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v): refusing to write in it; chmod go-w %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// openOwn opens path in a directory ownDir accepts, without following a
// symbolic link at path, and refuses anything but a regular file of one
// name: a hard link to another file is refused too.
func openOwn(path string, flag int) (*os.File, error) {
	if err := ownDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: refusing to follow it; remove it", path)
	}
	if err != nil {
		return nil, err
	}
	if err := checkRegular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkRegular refuses what is not a regular file of one name.
func checkRegular(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("look at %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: refusing to write to it", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("%s has %d hard links: refusing to write to it; remove it", path, st.Nlink)
	}
	return nil
}

// writeOwn replaces path with data: written to a new file beside it
// (O_EXCL: never one that was planted there) and renamed over it, which
// replaces a link at path rather than what it points to.
func writeOwn(path string, data []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp) // a crash may leave one; a link there is removed, not followed
	f, err := openOwn(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// checkRejectsLog opens the rejects log as the journal will, to refuse it
// at start; "" is no log.
func checkRejectsLog(path string) error {
	if path == "" {
		return nil
	}
	f, err := openOwn(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("rejects log: %w", err)
	}
	return f.Close()
}
