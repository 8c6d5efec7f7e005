package daemon

import (
	"errors"
	"fmt"
	"os"
)

// rotateLocked moves the full rejects log aside and starts a new one; j.mu
// is held. A storm writes a line per source and second: without rotation
// the log fills the disk (docs/design.md, "Reject records").
func (j *journal) rotateLocked() {
	j.f.Close()
	j.f, j.size = nil, 0
	if err := rotateFiles(j.path, j.rotation.Keep); err != nil {
		j.unrotatable = true
		j.log.Warn("rotate the rejects log; it grows until a SIGHUP tries again", "path", j.path, "err", err)
	}
	f, err := openOwn(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		// Writing resumes at the next reopen (SIGHUP); the records stay
		// in memory for show rejects meanwhile.
		j.log.Warn("open the rejects log after rotating it", "path", j.path, "err", err)
		return
	}
	j.f = f
	if fi, err := f.Stat(); err == nil {
		// A rotation that failed reopened the full file: it counts, or
		// the log would grow by another MaxBytes before the next try.
		j.size = fi.Size()
	}
	j.log.Info("rotated the rejects log", "path", j.path, "keep", j.rotation.Keep)
}

// rotateFiles renames path to path.1, path.1 to path.2, ... dropping
// path.keep; with keep 0 it removes path. A rename replaces a link
// planted at the new name rather than what it points to.
func rotateFiles(path string, keep int) error {
	if keep <= 0 {
		return os.Remove(path)
	}
	if err := os.Remove(fmt.Sprintf("%s.%d", path, keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for i := keep - 1; i >= 1; i-- {
		err := os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, path+".1")
}
