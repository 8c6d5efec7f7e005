package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// topSample is what one refresh of cacctl top reads.
type topSample struct {
	at      time.Time
	snap    collector.Snapshot // counters per interface, buckets, call admission
	total   maps.Stats
	rejects []maps.Reject
	agents  []agents.Row
}

// readTop reads a sample from the pinned maps, and the agents from the
// daemon when one runs.
func readTop(stateDir string) (topSample, error) {
	s := topSample{at: time.Now()}
	var err error
	if s.snap, err = collector.ReadPinned(stateDir, control.MonotonicCoarse()); err != nil {
		return s, err
	}
	for _, st := range s.snap.Interfaces {
		s.total.Add(st)
	}
	if s.rejects, err = loader.ReadAllRejects(stateDir); err != nil {
		return s, err
	}
	if c := api.Dial(stateDir); c != nil {
		if v, err := c.Agents(); err == nil {
			s.agents = v.Targets
		}
	}
	return s, nil
}

// topModel is the bubbletea model of cacctl top: the last two samples,
// whose difference gives the rates.
type topModel struct {
	read       func() (topSample, error)
	prev, last topSample
	err        error
}

type topTick struct{}

func (m topModel) Init() tea.Cmd { return m.refresh }

func (m topModel) refresh() tea.Msg {
	time.Sleep(time.Second)
	return topTick{}
}

func (m topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if s := msg.String(); s == "q" || s == "ctrl+c" || s == "esc" {
			return m, tea.Quit
		}
	case topTick:
		s, err := m.read()
		m.err = err
		if err == nil {
			m.prev, m.last = m.last, s
		}
		return m, m.refresh
	}
	return m, nil
}

func (m topModel) View() string {
	var b strings.Builder
	writeTop(&b, m.prev, m.last, m.err)
	b.WriteString("\nq quits\n")
	return b.String()
}

// writeTop draws a frame: rates per class from prev to last, buckets,
// charges and CPU, the sources rejected most, and the agents.
func writeTop(w io.Writer, prev, last topSample, err error) {
	if err != nil {
		fmt.Fprintf(w, "cacctl top: %v\n", err)
		return
	}
	if last.at.IsZero() {
		fmt.Fprintln(w, "cacctl top: reading...")
		return
	}
	secs := last.at.Sub(prev.at).Seconds()
	if prev.at.IsZero() || secs <= 0 || wentDown(prev.total, last.total) {
		secs = 0 // no rate: the first frame, or counters that restarted
	}
	d := last.total.Sub(prev.total)
	rate := func(n uint64) string {
		if secs == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(n)/secs)
	}
	fmt.Fprintf(w, "xdpcac top  %s  %d interface(s)\n\n", last.at.Format("15:04:05"), len(last.snap.Interfaces))
	fmt.Fprintf(w, "%-12s %10s %10s %10s  %s\n", "class", "seen/s", "admitted/s", "rejected/s", "rejected by (calls)")
	for _, c := range cac.Classes() {
		cs := d.Classes[c]
		fmt.Fprintf(w, "%-12s %10s %10s %10s  %s\n", c, rate(cs.Seen()), rate(cs.Admitted), rate(cs.RejectedTotal()), strings.TrimPrefix(strings.TrimSuffix(topReasons(cs, 3), ")"), " ("))
	}
	if len(last.snap.Buckets) > 0 {
		fmt.Fprintln(w, "\nbuckets")
		for _, bk := range last.snap.Buckets {
			name := bk.Level
			if bk.Class != "" {
				name = bk.Class
			}
			fill := 0.0
			if bk.Burst > 0 {
				fill = bk.Tokens / bk.Burst
			}
			fmt.Fprintf(w, "  %-12s %-20s %6.0f of %-6.0f calls\n", name, strings.Repeat("#", int(fill*20+0.5)), bk.Tokens, bk.Burst)
		}
	}
	if v := last.snap.CallAdmission; v != nil && v.Operational {
		fmt.Fprintf(w, "\ncall admission (%s model): charges %s of %s (session %s, load %s), CPU %s%%, buffers full %v\n",
			map[bool]string{true: "new", false: "old"}[v.NewModel], num(v.TotalCharges), num(v.Limit), num(v.SessionCharges), num(v.LoadCharge), num(v.CPUPercent), v.BuffersFull)
	}
	if len(last.rejects) > 0 {
		rs := append([]maps.Reject(nil), last.rejects...)
		sort.SliceStable(rs, func(i, j int) bool {
			return rs[i].LastNS > rs[j].LastNS || (rs[i].LastNS == rs[j].LastNS && rs[i].Count > rs[j].Count)
		})
		// The table holds a record of each of the last seconds: the
		// newest of each source, class and reason stands for it.
		seen := map[string]bool{}
		rs = slices.DeleteFunc(rs, func(r maps.Reject) bool {
			k := r.Source + " " + r.Class.String() + " " + r.Reason.String()
			dup := seen[k]
			seen[k] = true
			return dup
		})
		fmt.Fprintln(w, "\nlatest rejected sources")
		for _, r := range rs[:min(5, len(rs))] {
			fmt.Fprintf(w, "  %-28s %-12s %-16s %d in its last second\n", r.Source, r.Class, r.Reason, r.Count)
		}
	}
	if len(last.agents) > 0 {
		fmt.Fprintln(w)
		agents.WriteAgents(w, last.agents, "")
	}
}

func newTopCmd(g *globals) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "top [--once]",
		Short: "A live view: rates per class, buckets, charges, CPU, rejected sources, agents",
		Long: `top redraws every second what the filter admits and rejects per class and
why, how full the class and environment buckets are, the charges and the
CPU of call admission, the sources rejected last, and the session agents
when cacctl run watches some. q quits. --once prints one frame, a second
apart from the first reading, and exits: for scripts and logs.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			read := func() (topSample, error) { return readTop(g.stateDir) }
			first, err := read()
			if err != nil {
				return err
			}
			if once {
				time.Sleep(time.Second)
				last, err := read()
				writeTop(cmd.OutOrStdout(), first, last, err)
				return err
			}
			p := tea.NewProgram(topModel{read: read, last: first}, tea.WithAltScreen(), tea.WithOutput(cmd.OutOrStdout()))
			_, err = p.Run()
			return err
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "print one frame and exit")
	return cmd
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
