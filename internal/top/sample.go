package top

import (
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
	"golang.org/x/sys/unix"
)

// Sample is what one refresh of cacctl top reads.
type Sample struct {
	at       time.Time
	second   uint64 // the fast path's clock, in whole seconds, when read
	stateDir string
	snap     collector.Snapshot // counters per interface, buckets, call admission
	total    maps.Stats
	rejects  []maps.Reject
	// defunct are attachments whose pinned link no longer holds their
	// interface: it went away or was replaced, and nothing filters it.
	defunct []string
	daemon  bool // a cacctl run serves the state directory
	agents  []agents.Row
	egress  []agents.Egress
	fleet   api.Fleet // the daemon's fleet view; not Configured without one
}

// Reader reads the samples of one state directory.
type Reader struct {
	stateDir string
	// names are the accounts' and customers' of the file the daemon has
	// in force, read again only when it puts another in force.
	names collector.FileNames
}

// NewReader reads the samples of stateDir.
func NewReader(stateDir string) *Reader { return &Reader{stateDir: stateDir} }

// Read reads a sample from the pinned maps, and the agents from the
// daemon when one runs; with a daemon, the accounts and customers by the
// names of the file it has in force.
func (r *Reader) Read() (Sample, error) {
	stateDir := r.stateDir
	now := control.MonotonicCoarse()
	s := Sample{at: time.Now(), second: now / 1e9, stateDir: stateDir}
	c := api.Dial(stateDir)
	var names collector.Names
	if c != nil {
		if st, err := c.Status(); err == nil {
			names, _ = r.names.Of(st.Config, st.LoadedAt) // no names: no accounts shown
		}
	}
	var err error
	if s.snap, err = collector.ReadPinnedNamed(stateDir, now, names); err != nil && (names == nil || len(s.snap.Interfaces) == 0) {
		// With names, an account the file does not name costs its row,
		// not the view.
		return s, fmt.Errorf("read %s: %w", stateDir, err)
	}
	// The totals as show stats gives them, since clear counters; the
	// snapshot's are the fast path's, as the metrics export them.
	per, err := loader.ReadAllStats(stateDir)
	if err != nil {
		return s, fmt.Errorf("read the counters: %w", err)
	}
	s.total = loader.Total(per)
	if s.rejects, err = loader.ReadAllRejects(stateDir); err != nil {
		return s, fmt.Errorf("read the reject records: %w", err)
	}
	atts, err := loader.List(stateDir)
	if err != nil {
		return s, fmt.Errorf("list the attachments: %w", err)
	}
	for _, a := range atts {
		// NeedsAttach asks only the pinned link and netlink: cheap enough
		// for every refresh, unlike loader.Status, which loads a program.
		if loader.NeedsAttach(stateDir, a) {
			s.defunct = append(s.defunct, a.Key())
		}
	}
	if c != nil {
		s.daemon = true
		if v, err := c.Agents(); err == nil {
			s.agents, s.egress = v.Targets, v.Egress
		}
		if v, err := c.Fleet(); err == nil {
			s.fleet = v
		}
	}
	return s, nil
}

// Once prints one plain frame: rates need a second reading a second
// after the first, which is not worth waiting for when nothing is
// attached.
func Once(w io.Writer, first Sample, read func() (Sample, error)) error {
	last := first
	if len(first.snap.Interfaces) > 0 {
		time.Sleep(time.Second)
		var err error
		if last, err = read(); err != nil {
			return err
		}
	}
	m := newTopModel(read, first)
	m = m.withSample(last, nil)
	_, err := io.WriteString(w, m.plain(onceWidth))
	return err
}

// onceWidth is how wide --once lays out its tables: wide enough that
// IPv6 sources are whole, narrow enough for a log line.
const onceWidth = 100

// IsTerminal reports whether w is a terminal: only then does top draw a
// live view, and only then may anything ask the terminal a question.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Live runs the live view on out, a terminal, until q.
func Live(out io.Writer, first Sample, read func() (Sample, error)) error {
	_, err := tea.NewProgram(newTopModel(read, first), tea.WithOutput(out)).Run()
	return err
}
