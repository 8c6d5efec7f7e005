package daemon

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
)

// fileClock is a test's clock for a rejectsFile.
type fileClock struct{ t time.Time }

func (c *fileClock) now() time.Time { return c.t }

func newTestFile(t *testing.T, path string, rot Rotation) (*rejectsFile, *fileClock) {
	t.Helper()
	c := &fileClock{t: time.Unix(1_700_000_000, 0)}
	r := newRejectsFile(path, rot, slog.New(slog.DiscardHandler))
	r.now = c.now
	return r, c
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// TestRotationRetried: a rotation that fails leaves the log degraded with
// its error, keeps writing to the full file, is not tried again on every
// batch but after the backoff, and clears the fault once it passes.
func TestRotationRetried(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rejects.jsonl")
	r, clock := newTestFile(t, path, Rotation{MaxBytes: 1, Keep: 1})
	if err := r.reopen(); err != nil {
		t.Fatal(err)
	}
	// path.1 a directory with something in it: the rename onto it fails.
	if err := os.MkdirAll(filepath.Join(path+".1", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	r.write(encoded(stormLines(3)))
	h := r.health()
	if h.Failures != 1 || !strings.Contains(h.Fault, "rotate the rejects log") {
		t.Fatalf("after a failed rotation: %+v", h)
	}
	r.write(encoded(stormLines(2))) // before the backoff: written, no new try
	if h := r.health(); h.Failures != 1 {
		t.Errorf("rotation tried again before its backoff: %+v", h)
	}
	if n := countLines(t, path); n != 5 {
		t.Errorf("the full file holds %d lines, want 5: writing goes on", n)
	}
	if err := os.RemoveAll(path + ".1"); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(fileRetryFirst)
	r.write(encoded(stormLines(1)))
	if h := r.health(); h.Fault != "" || h.Failures != 1 {
		t.Errorf("after the backoff, with the way clear: %+v, want no fault", h)
	}
	if n := countLines(t, path+".1"); n != 6 {
		t.Errorf("rotated file holds %d lines, want 6", n)
	}
	r.close()
}

// TestOpenRetried: a log that cannot be opened keeps its records in
// memory, degraded, tries again after a backoff that doubles, and writes
// what waited first once it opens; past its bound a record is counted
// lost.
func TestOpenRetried(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rejects.jsonl")
	r, clock := newTestFile(t, path, Rotation{})
	os.Chmod(dir, 0o777) // refused: a directory others may write
	r.write(encoded(stormLines(4)))
	if h := r.health(); h.Failures != 1 || !strings.Contains(h.Fault, "open the rejects log") {
		t.Fatalf("after a failed open: %+v", h)
	}
	clock.t = clock.t.Add(fileRetryFirst)
	r.write(encoded(stormLines(1)))
	if h := r.health(); h.Failures != 2 {
		t.Fatalf("after the backoff: %+v, want a second try", h)
	}
	clock.t = clock.t.Add(fileRetryFirst) // the backoff doubled: not yet
	os.Chmod(dir, 0o700)
	r.write(encoded(stormLines(1)))
	if _, err := os.Stat(path); err == nil {
		t.Fatal("opened before the doubled backoff")
	}
	clock.t = clock.t.Add(fileRetryFirst)
	r.write(encoded(stormLines(2)))
	if h := r.health(); h.Fault != "" || h.Lost != 0 {
		t.Errorf("after the open: %+v", h)
	}
	if n := countLines(t, path); n != 8 {
		t.Errorf("the log holds %d lines, want the 8 written", n)
	}
	r.close()

	// Bounded: a log that never opens keeps at most filePendingMax bytes.
	r, _ = newTestFile(t, filepath.Join(t.TempDir(), "no", "such"), Rotation{})
	r.openAt = clock.t.Add(time.Hour)
	many := stormLines(filePendingMax / 100)
	for i := range 10 {
		r.write(encoded(many[i*len(many)/10 : (i+1)*len(many)/10]))
	}
	if h := r.health(); h.Lost == 0 || len(r.pending) > filePendingMax {
		t.Errorf("%d records over the bound: lost %d, pending %d bytes", len(many), h.Lost, len(r.pending))
	}
}

// encoded are lines as the journal hands them to the file: a batch and
// its count.
func encoded(lines []api.RejectLine) ([]byte, int) {
	var b logBatch
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.buf = append(append(b.buf, j...), '\n')
		b.n++
	}
	return b.buf, b.n
}

// TestRecordRing: the ring gives its records oldest first, and once full
// forgets the oldest; the answer is the JSON array of them.
func TestRecordRing(t *testing.T) {
	r := newRecordRing(3)
	lines := stormLines(5)
	for i, l := range lines {
		b, _ := json.Marshal(l)
		r.push(b)
		out := newRejectsJSON()
		for _, b := range r.snapshot(nil) {
			out.raw(b)
		}
		var got []api.RejectLine
		if err := json.Unmarshal(out.bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := lines[max(0, i-2) : i+1]
		if len(got) != len(want) || got[0].Source != want[0].Source || got[len(got)-1].Source != want[len(want)-1].Source {
			t.Fatalf("after %d pushes: %d records from %s, want %d from %s", i+1, len(got), got[0].Source, len(want), want[0].Source)
		}
	}
	if b := newRejectsJSON().bytes(); string(b) != "[]\n" {
		t.Errorf("no records: %q, want an empty list", b)
	}
}
