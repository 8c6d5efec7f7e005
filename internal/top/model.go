package top

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/table"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// topModel is the bubbletea model of cacctl top: the last two samples,
// whose difference gives the rates, what it has seen since it started,
// and the view the operator picked.
type topModel struct {
	read       func() (Sample, error)
	prev, last Sample
	err        error
	// known are the interfaces attached at any reading since top started:
	// one of them missing now was detached under it.
	known  map[string]bool
	window rejectWindow
	view   topView
	byRate bool
	// width and height are the terminal's; 80x24 until it says.
	width, height int
	// table is the current view's main table: it keeps the cursor that
	// the arrows move between refreshes.
	table table.Model
}

// topSampleMsg is a reading, which the tick command takes off the
// program's loop.
type topSampleMsg struct {
	s   Sample
	err error
}

func newTopModel(read func() (Sample, error), first Sample) topModel {
	m := topModel{read: read, known: map[string]bool{}, window: rejectWindow{}, width: 80, height: 24}
	return m.withSample(first, nil).sync(true)
}

// withSample takes in a reading; a failed one keeps the last frame, and
// the error is shown above it.
func (m topModel) withSample(s Sample, err error) topModel {
	m.err = err
	if err != nil {
		return m
	}
	m.prev, m.last = m.last, s
	for name := range s.snap.Interfaces {
		m.known[name] = true
	}
	m.window.observe(s.rejects, s.second)
	return m
}

func (m topModel) Init() tea.Cmd { return m.tick() }

func (m topModel) tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg {
		s, err := m.read()
		return topSampleMsg{s, err}
	})
}

func (m topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m.sync(false), nil
	case topSampleMsg:
		return m.withSample(msg.s, msg.err).sync(false), m.tick()
	case tea.KeyPressMsg:
		switch k := msg.String(); k {
		case "q", "esc", "ctrl+c":
			return m, tea.Quit
		case "1", "2", "3", "4":
			m.view = topView(k[0] - '1')
			return m.sync(true), nil
		case "tab":
			m.view = (m.view + 1) % numViews
			return m.sync(true), nil
		case "shift+tab":
			m.view = (m.view + numViews - 1) % numViews
			return m.sync(true), nil
		case "s":
			m.byRate = !m.byRate
			return m.sync(false), nil
		}
		var cmd tea.Cmd
		m.table, cmd = m.table.Update(msg)
		return m, cmd
	}
	return m, nil
}

// sync lays the main table out for the current view, sample and size; a
// new view, or a column more or less, starts a new table at its first
// row.
func (m topModel) sync(reset bool) topModel {
	b := m.body(m.view)
	cols, rows := layout(b.main, m.width)
	if reset || len(m.table.Columns()) != len(cols) {
		m.table = table.New(table.WithColumns(cols), table.WithFocused(true), table.WithStyles(tableStyles(true, true)))
	}
	// The columns are as many as before, so the rows fit them in either
	// order.
	m.table.SetColumns(cols)
	m.table.SetRows(rows)
	m.table.SetWidth(m.width)
	m.table.SetHeight(max(m.tableHeight(b), 2))
	return m
}

// above is what the screen shows over the main table: the head, then
// the view's caption and fixed tables.
func (m topModel) above(b viewBody, width int, styled bool) []string {
	return append(m.head(styled), viewHead(b, width, styled)...)
}

// head is the title and the warnings.
func (m topModel) head(styled bool) []string {
	lines := []string{m.title()}
	loud := lipgloss.NewStyle().Bold(true).Reverse(true)
	for _, w := range m.warnings() {
		if styled {
			w = loud.Render(w)
		} else {
			w = "!! " + w
		}
		lines = append(lines, w)
	}
	return lines
}

// viewHead is a view's caption and fixed tables, after a blank line.
func viewHead(b viewBody, width int, styled bool) []string {
	lines := append([]string{""}, b.caption...)
	for _, t := range b.fixed {
		cols, rows := layout(t, width)
		ft := table.New(table.WithColumns(cols), table.WithRows(rows), table.WithStyles(tableStyles(styled, false)),
			table.WithWidth(width), table.WithHeight(len(rows)+1))
		lines = append(lines, strings.Split(ft.View(), "\n")...)
		lines = append(lines, "")
	}
	return lines
}

// tableHeight is the height left for the main table once the lines above
// it and the footer are drawn.
func (m topModel) tableHeight(b viewBody) int {
	return m.height - len(m.above(b, m.width, true)) - 1
}

func (m topModel) View() tea.View {
	b := m.body(m.view)
	lines := m.above(b, m.width, true)
	switch h := m.tableHeight(b); {
	case len(b.main.rows) == 0:
		lines = append(lines, "  "+b.main.empty)
	case h >= 2:
		lines = append(lines, strings.Split(m.table.View(), "\n")...)
	}
	// Nothing may pass the terminal's edge: a line too long would wrap
	// and push the title off the top.
	lines = lines[:min(len(lines), max(m.height-1, 0))]
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = append(lines, m.footer())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.width, "")
	}
	v := tea.NewView(strings.Join(lines, "\n"))
	v.AltScreen = true
	return v
}

// plain is every view one after the other, with no escape codes and no
// height: the frame of --once.
func (m topModel) plain(width int) string {
	lines := m.head(false)
	for v := range numViews {
		b := m.body(v)
		lines = append(lines, viewHead(b, width, false)...)
		if len(b.main.rows) == 0 {
			lines = append(lines, "  "+b.main.empty)
		} else {
			if v == viewSources {
				b.main.rows = b.main.rows[:min(len(b.main.rows), 20)]
			}
			cols, rows := layout(b.main, width)
			t := table.New(table.WithColumns(cols), table.WithRows(rows), table.WithStyles(tableStyles(false, false)),
				table.WithWidth(width), table.WithHeight(len(rows)+1))
			lines = append(lines, strings.Split(t.View(), "\n")...)
		}
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(ansi.Truncate(l, width, ""), " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func (m topModel) title() string {
	on := "no interface"
	if names := slices.Sorted(maps.Keys(m.last.snap.Interfaces)); len(names) > 0 {
		on = strings.Join(names, ", ")
	}
	at := "reading..."
	if !m.last.at.IsZero() {
		at = m.last.at.Format("15:04:05")
	}
	return fmt.Sprintf("xdpcac top  %s  on %s", at, on)
}

// warnings are the loud lines: what leaves traffic unfiltered, or the
// numbers untrue.
func (m topModel) warnings() []string {
	var w []string
	if m.err != nil {
		w = append(w, fmt.Sprintf("cannot read: %v; this is the last reading", m.err))
	}
	cur := m.last.snap.Interfaces
	var gone []string
	for name := range m.known {
		if _, ok := cur[name]; !ok {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	// The names come last: a line cut at the terminal's edge keeps what
	// it says.
	switch {
	case len(gone) > 0 && len(cur) == 0:
		w = append(w, "NOT PROTECTED: attached to no interface; detached since top started: "+strings.Join(gone, ", "))
	case len(gone) > 0:
		w = append(w, "NOT PROTECTED: detached since top started: "+strings.Join(gone, ", "))
	case len(cur) == 0:
		w = append(w, "NOT PROTECTED: xdpcac is attached to no interface; cacctl run or cacctl attach puts it on")
	}
	if len(m.last.defunct) > 0 {
		w = append(w, "NOT PROTECTED: the interface went away, nothing filters it: "+strings.Join(m.last.defunct, ", "))
	}
	if v := m.last.snap.CallAdmission; v != nil && v.Stale {
		w = append(w, "STALE control plane: on-stale "+v.OnStale+" applies")
	}
	return w
}

// footer names the key of each view, the current one marked, and the
// keys that sort and quit; shorter names when the terminal is narrow.
func (m topModel) footer() string {
	cur := lipgloss.NewStyle().Reverse(true)
	order := "count"
	if m.byRate {
		order = "rate"
	}
	for _, short := range []bool{false, true} {
		var parts []string
		for v := range numViews {
			p := fmt.Sprintf("%d %s", v+1, v)
			if short {
				p = p[:5]
			}
			if v == m.view {
				p = cur.Render(p)
			}
			parts = append(parts, p)
		}
		f := strings.Join(parts, "  ") + "   s by " + order + "   q quit"
		if short {
			f = strings.Join(parts, " ") + "  s:" + order + "  q:quit"
		}
		if ansi.StringWidth(f) <= m.width || short {
			return f
		}
	}
	return ""
}

// layout gives the columns their widths for a table as wide as width,
// the flex one taking what the others leave, and draws the rows to them.
func layout(t tableSpec, width int) ([]table.Column, []table.Row) {
	ws := make([]int, len(t.cols))
	used := 0
	for i, c := range t.cols {
		ws[i] = c.width
		used += c.width + 1 // the cell's padding
	}
	for i, c := range t.cols {
		if c.flex {
			ws[i] = max(4, c.width+width-used)
		}
	}
	cols := make([]table.Column, len(t.cols))
	for i, c := range t.cols {
		cols[i] = table.Column{Title: align(c.title, ws[i], c.right), Width: ws[i]}
	}
	rows := make([]table.Row, len(t.rows))
	for i, r := range t.rows {
		row := make(table.Row, len(r))
		for j, cell := range r {
			switch c := t.cols[j]; {
			case c.bar:
				cell = bar(cell, ws[j])
			case c.right:
				cell = align(cell, ws[j], true)
			}
			row[j] = cell
		}
		rows[i] = row
	}
	return cols, rows
}

// align pads s on the left to width when right is set; the table pads
// and cuts the rest.
func align(s string, width int, right bool) string {
	if right {
		return fmt.Sprintf("%*s", width, s)
	}
	return s
}

// tableStyles are bold headers and a highlighted cursor row on a
// terminal, and nothing but spacing in plain text.
func tableStyles(styled, cursor bool) table.Styles {
	s := table.Styles{
		Header:   lipgloss.NewStyle().PaddingRight(1),
		Cell:     lipgloss.NewStyle().PaddingRight(1),
		Selected: lipgloss.NewStyle(),
	}
	if styled {
		s.Header = s.Header.Bold(true)
	}
	if styled && cursor {
		s.Selected = s.Selected.Reverse(true)
	}
	return s
}
