package main

import (
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
	"golang.org/x/sys/unix"
)

// topSample is what one refresh of cacctl top reads.
type topSample struct {
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
}

// readTop reads a sample from the pinned maps, and the agents from the
// daemon when one runs.
func readTop(stateDir string) (topSample, error) {
	now := control.MonotonicCoarse()
	s := topSample{at: time.Now(), second: now / 1e9, stateDir: stateDir}
	var err error
	if s.snap, err = collector.ReadPinned(stateDir, now); err != nil {
		return s, fmt.Errorf("read %s: %w", stateDir, err)
	}
	for _, st := range s.snap.Interfaces {
		s.total.Add(st)
	}
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
	if c := api.Dial(stateDir); c != nil {
		s.daemon = true
		if v, err := c.Agents(); err == nil {
			s.agents = v.Targets
		}
	}
	return s, nil
}

func newTopCmd(g *globals) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "top [--once]",
		Short: "A live view: rates per class, rejected sources, agents, charges and buckets",
		Long: `top redraws every second what the filter admits and rejects per class and
why, the sources rejected most, the session agents when cacctl run watches
some, and the charges of call admission and the buckets. It fits the
terminal and follows its size; a line at the top says loudly when an
interface is not protected: nothing attached, an attachment gone since top
started, or an interface gone from under its filter.

Keys: 1-4 or tab pick the view (classes, sources, agents, charges), s sorts
the sources by rate (their rejects in the last full second) or by count
(their rejects in the last ten seconds, of those top read: the daemon keeps
about two seconds of records), the arrows and page keys scroll, q quits.

--once prints every view as plain text, a second apart from the first
reading (at once when nothing is attached), and exits: for scripts and
logs. top does the same when its output is not a terminal.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			read := func() (topSample, error) { return readTop(g.stateDir) }
			first, err := read()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !once && !isTerminal(out) {
				// A live view would be escape codes in a file or a pipe:
				// give what a script can read.
				fmt.Fprintln(cmd.ErrOrStderr(), "cacctl top: the output is not a terminal; printing one frame, as --once does")
				once = true
			}
			if once {
				return topOnce(out, first, read)
			}
			p := tea.NewProgram(newTopModel(read, first), tea.WithOutput(out))
			_, err = p.Run()
			return err
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "print every view once as plain text and exit")
	return cmd
}

// topOnce prints one plain frame: rates need a second reading a second
// after the first, which is not worth waiting for when nothing is
// attached.
func topOnce(w io.Writer, first topSample, read func() (topSample, error)) error {
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

// isTerminal reports whether w is a terminal: only then does top draw a
// live view, and only then may anything ask the terminal a question.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// wentDown reports whether any counter is lower in b than in a: an
// attachment went away or started again between the samples.
func wentDown(a, b maps.Stats) bool {
	for c := range a.Classes {
		if b.Classes[c].Admitted < a.Classes[c].Admitted || b.Classes[c].RejectedTotal() < a.Classes[c].RejectedTotal() {
			return true
		}
	}
	return false
}
