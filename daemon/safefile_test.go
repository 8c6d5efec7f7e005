package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plant makes dir/name a symbolic link to a file of its own, with what it
// holds, and returns the target's path: what another user would plant.
func plant(t *testing.T, dir, name string) string {
	t.Helper()
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return target
}

func requireUntouched(t *testing.T, target string) {
	t.Helper()
	if b, err := os.ReadFile(target); err != nil || string(b) != "precious\n" {
		t.Errorf("the link's target %s now holds %q (%v)", target, b, err)
	}
}

// TestFilesRefuseSymlinks (docs/design.md, "Files"): the rejects log, a
// file replaced whole (the session agents' statuses) and a file opened as
// the daemon's lock is, planted as a symbolic link, are refused with an
// error that says so, and the link's target is untouched.
func TestFilesRefuseSymlinks(t *testing.T) {
	dir := t.TempDir()

	target := plant(t, dir, "rejects.jsonl")
	j := newRejectsFile(filepath.Join(dir, "rejects.jsonl"), Rotation{}, slog.New(slog.DiscardHandler))
	if err := j.reopen(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("rejects log through a link: %v", err)
	}
	requireUntouched(t, target)

	target = plant(t, dir, "lock")
	if f, err := openOwn(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		f.Close()
		t.Errorf("lock file through a link: %v", err)
	}
	requireUntouched(t, target)

	// A link where the new copy is written is removed, not followed; one
	// at the file itself is replaced by the rename.
	tmpTarget := plant(t, dir, "agents.json.tmp")
	target = plant(t, dir, "agents.json")
	if err := writeOwn(filepath.Join(dir, "agents.json"), []byte("[]")); err != nil {
		t.Fatal(err)
	}
	requireUntouched(t, tmpTarget)
	requireUntouched(t, target)
	if fi, err := os.Lstat(filepath.Join(dir, "agents.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("agents.json after the write: %v, %v", fi, err)
	}

	// A hard link is another file under our name too.
	target = filepath.Join(t.TempDir(), "victim")
	os.WriteFile(target, []byte("precious\n"), 0o600)
	if err := os.Link(target, filepath.Join(dir, "hard.jsonl")); err != nil {
		t.Fatal(err)
	}
	j = newRejectsFile(filepath.Join(dir, "hard.jsonl"), Rotation{}, slog.New(slog.DiscardHandler))
	if err := j.reopen(); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("rejects log with a hard link: %v", err)
	}
	requireUntouched(t, target)
}

// TestFilesRefuseDirectories: the directory of a file must be no link,
// this user's, and closed to others' writes; a missing one is made 0700.
func TestFilesRefuseDirectories(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := ownDir(filepath.Join(base, "link")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a directory that is a link: %v", err)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := ownDir(open); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a directory anyone may write: %v", err)
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		if err := os.Mkdir(theirs, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := ownDir(theirs); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("another user's directory: %v", err)
		}
	}
	made := filepath.Join(base, "new", "dir")
	if err := ownDir(made); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made %v, %v; want mode 0700", fi, err)
	}
}
