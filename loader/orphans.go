package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The steps of Attach at which Options.AtStep is called: the program is
// on the interface, and then each part of its state is pinned in the
// temporary directory, before the rename that makes the attachment.
const (
	StepAttached  = "attached"  // XDP and egress programs attached, nothing pinned
	StepDirectory = "directory" // the temporary directory made
	StepMaps      = "maps"      // the maps pinned in it
	StepProgram   = "program"   // the XDP program pinned
	StepLink      = "link"      // the XDP link pinned: it outlives the process
	StepEgress    = "egress"    // the egress program pinned; the rename is next
)

// Steps are the steps of Attach in order.
var Steps = []string{StepAttached, StepDirectory, StepMaps, StepProgram, StepLink, StepEgress}

// Orphan is a temporary directory that an attach (or a daemon pinning its
// state again) was killed while building. Once it holds the link's pin,
// the filter stays on the interface with no attachment to detach: status
// reports it, and a detach or an attach of its interface removes it.
type Orphan struct {
	Attachment // empty when the name does not say (an older version's)
	Dir        string
	// Link says the directory holds the pinned XDP link: the filter is on
	// the interface.
	Link bool
}

// orphanOf reads the attachment a temporary directory's name is for:
// tmpPrefix, eight hex digits, '-', the attachment's directory name.
func orphanOf(name string) (Attachment, bool) {
	rest, ok := strings.CutPrefix(name, tmpPrefix)
	if !ok || len(rest) < 10 || rest[8] != '-' {
		return Attachment{}, false
	}
	return parseDirName(rest[9:]), true
}

// listOrphans lists the temporary directories of stateDir. Under the lock
// each is an orphan: the command that built it would hold the lock.
func listOrphans(stateDir string) ([]Orphan, error) {
	entries, err := os.ReadDir(stateDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state directory: %w", err)
	}
	var out []Orphan
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		o := Orphan{Dir: filepath.Join(stateDir, e.Name())}
		o.Attachment, _ = orphanOf(e.Name())
		_, err := os.Stat(filepath.Join(o.Dir, pinLink))
		o.Link = err == nil
		out = append(out, o)
	}
	return out, nil
}

// Orphans lists what attaches that were killed left in stateDir. It takes
// the lock without waiting, for a directory being built holds it: while
// another command runs it reports nothing, and never waits for it.
func Orphans(stateDir string) ([]Orphan, error) {
	lk, err := lockStateDir(stateDir, 0)
	if errors.Is(err, errLockBusy) || errors.Is(err, errStateDirGone) || errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	return listOrphans(stateDir)
}

// hasOrphan reports, without the lock, whether stateDir has a temporary
// directory for a: Attach lets a's XDP program pass its first check, to
// be taken off under the lock.
func hasOrphan(stateDir string, a Attachment) bool {
	orphans, _ := listOrphans(stateDir)
	for _, o := range orphans {
		if o.Attachment == a && o.Link {
			return true
		}
	}
	return false
}

// cleanOrphans, under the lock, takes what the orphans of a hold off the
// interface (the egress program, then the XDP link) and removes them. With
// no attachment of a left, an egress filter of ours that an attach killed
// before it pinned anything left on the interface goes too. It reports
// whether it removed anything.
func cleanOrphans(stateDir string, a Attachment) (bool, error) {
	orphans, err := listOrphans(stateDir)
	if err != nil {
		return false, err
	}
	cleaned := false
	for _, o := range orphans {
		if o.Attachment != a {
			continue
		}
		if err := removeEgress(a, o.Dir); err != nil {
			return cleaned, fmt.Errorf("what a stopped attach left in %s: %w", o.Dir, err)
		}
		if o.Link {
			if err := detachPinnedLink(a, filepath.Join(o.Dir, pinLink)); err != nil {
				return cleaned, fmt.Errorf("what a stopped attach left in %s: %w", o.Dir, err)
			}
		} else if pinnedMulti(o.Dir) {
			// Mode multi pins no link: its program is in the dispatcher
			// from before the pins were made.
			if id, err := pinnedProgID(o.Dir); err == nil {
				if err := leaveDispatcher(a, id); err != nil {
					return cleaned, fmt.Errorf("what a stopped attach left in %s: %w", o.Dir, err)
				}
			}
		}
		if err := os.RemoveAll(o.Dir); err != nil {
			return cleaned, fmt.Errorf("remove %s: %w", o.Dir, err)
		}
		cleaned = true
	}
	if IsAttached(stateDir, a) {
		return cleaned, nil
	}
	stray, err := ourFilters(a)
	if err != nil || len(stray) == 0 {
		return cleaned, err
	}
	// Whether the attach added the qdisc was never pinned: it stays.
	return true, removeEgressFilters(a, false)
}
