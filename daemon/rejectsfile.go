package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// How long the rejects log waits before it tries again a rotation or an
// open that failed, doubling up to the most; and how many bytes of
// records it holds in memory meanwhile. A storm writes a record a source and second, so what
// waits is bounded, and what does not fit is counted lost, never dropped
// in silence (docs/design.md, "Reject records").
const (
	fileRetryFirst = time.Second
	fileRetryMost  = time.Minute
	filePendingMax = 8 << 20
)

// rejectsFile is the rejects log: JSON lines encoded a batch (a sweep's
// records) at a time into one buffer and written with one write, rotated
// at its size. A failure to write, rotate or open it again is retried
// with a backoff and leaves the journal degraded, with its error, until
// it passes; what could not be written waits in memory for the file.
type rejectsFile struct {
	path     string // "" writes no file
	rotation Rotation
	log      *slog.Logger
	now      func() time.Time

	mu   sync.Mutex
	f    *os.File
	size int64 // of f, for the rotation
	// pending are encoded lines no file took yet (it could not be
	// opened or written), written first once one does.
	pending []byte
	// openAt and rotateAt are when a failed open and a failed rotation
	// are tried again; backoff is the wait after the next failure.
	openAt, rotateAt time.Time
	backoff          time.Duration
	// fault is the error the file is degraded by ("" none), since when.
	fault      string
	faultSince time.Time
	// failures counts the writes, opens and rotations that failed; lost
	// the records no file will ever have.
	failures, lost uint64
}

func newRejectsFile(path string, rot Rotation, log *slog.Logger) *rejectsFile {
	return &rejectsFile{path: path, rotation: rot, log: log, now: time.Now, backoff: fileRetryFirst}
}

// reopen opens the file again, after a log rotation (SIGHUP): a file
// that could not be opened is an error, and the one before stays.
func (r *rejectsFile) reopen() error {
	if r.path == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f, size, err := r.openFile()
	if err != nil {
		return err
	}
	r.closeLocked()
	r.f, r.size, r.openAt, r.rotateAt = f, size, time.Time{}, time.Time{}
	r.healed()
	return nil
}

func (r *rejectsFile) openFile() (*os.File, int64, error) {
	f, err := openOwn(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, 0, fmt.Errorf("rejects log: %w", err)
	}
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return f, size, nil
}

// write appends a batch of n encoded records, each with its newline,
// after what waited before them; the file is rotated once full.
func (r *rejectsFile) write(batch []byte, n int) {
	if r.path == "" || n == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending)+len(batch) > filePendingMax {
		r.lost += uint64(n) // the file has been failing for long: memory stays bounded
	} else {
		r.pending = append(r.pending, batch...)
	}
	now := r.now()
	if r.f == nil && !now.Before(r.openAt) {
		if f, size, err := r.openFile(); err != nil {
			r.failed(now, &r.openAt, "open the rejects log", err)
		} else {
			r.f, r.size = f, size
			r.healed()
		}
	}
	if r.f == nil {
		return
	}
	n, err := r.f.Write(r.pending)
	r.size += int64(n)
	// What was written goes; what was not waits for the file.
	r.pending = r.pending[:copy(r.pending, r.pending[n:])]
	if err != nil {
		r.failed(now, &r.openAt, "write the rejects log", err)
		r.closeLocked()
		return
	}
	if r.rotation.MaxBytes > 0 && r.size >= r.rotation.MaxBytes && !now.Before(r.rotateAt) {
		r.rotate(now)
	}
}

// rotate moves the full file aside and starts a new one; a rotation that
// fails keeps writing to the full file and is tried again after the
// backoff.
func (r *rejectsFile) rotate(now time.Time) {
	r.closeLocked()
	if err := rotateFiles(r.path, r.rotation.Keep); err != nil {
		r.failed(now, &r.rotateAt, "rotate the rejects log", err)
	} else {
		r.rotateAt = time.Time{}
		r.log.Info("rotated the rejects log", "path", r.path, "keep", r.rotation.Keep)
	}
	f, size, err := r.openFile()
	if err != nil {
		r.failed(now, &r.openAt, "open the rejects log after rotating it", err)
		return
	}
	// A rotation that failed opened the full file again: its size
	// counts, and the next try waits for the backoff, not the next line.
	r.f, r.size = f, size
	if r.rotateAt.IsZero() {
		r.healed()
	}
}

// failed counts a failure, degrades the file by it and sets when to try
// again.
func (r *rejectsFile) failed(now time.Time, retry *time.Time, what string, err error) {
	r.failures++
	if r.fault == "" {
		r.faultSince = now
	}
	r.fault = what + ": " + err.Error()
	*retry = now.Add(r.backoff)
	r.log.Warn(what+"; tried again later", "path", r.path, "err", err, "retry_in", r.backoff)
	r.backoff = min(2*r.backoff, fileRetryMost)
}

func (r *rejectsFile) healed() {
	r.fault, r.backoff = "", fileRetryFirst
}

func (r *rejectsFile) closeLocked() {
	if r.f == nil {
		return
	}
	r.f.Close()
	r.f = nil
}

// close flushes and closes the file.
func (r *rejectsFile) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
	if n := bytes.Count(r.pending, []byte{'\n'}); n > 0 {
		r.lost += uint64(n)
		r.log.Warn("rejects log: records never written", "path", r.path, "records", n)
	}
}

// fileHealth is the rejects log's state for status and the metrics.
type fileHealth struct {
	Fault          string
	Since          time.Time
	Failures, Lost uint64
}

func (r *rejectsFile) health() fileHealth {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fileHealth{Fault: r.fault, Since: r.faultSince, Failures: r.failures, Lost: r.lost}
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
