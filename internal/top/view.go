package top

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/internal/show"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// topView is one screen of cacctl top, picked with its key.
type topView int

const (
	viewClasses topView = iota
	viewSources
	viewAgents
	viewCharges
	numViews
)

func (v topView) String() string {
	return [numViews]string{"classes", "sources", "agents", "charges"}[v]
}

// colSpec is a column of a view's table. The flex column takes the width
// the others leave, so that a view fills the terminal and no more.
type colSpec struct {
	title string
	width int
	right bool // numbers, aligned on their last digit
	flex  bool
	// bar cells hold a fill in thousandths, drawn as a bar as wide as
	// the column once the layout knows its width.
	bar bool
}

// tableSpec is a table of a view: its columns, its rows, and what to say
// when it has none.
type tableSpec struct {
	cols  []colSpec
	rows  [][]string
	empty string
}

// viewBody is what a view draws: lines that say what the numbers are, then
// tables of a fixed size, then the main table, which fills the height
// left and scrolls.
type viewBody struct {
	caption []string
	fixed   []tableSpec
	main    tableSpec
}

// body builds the current view from the last two samples.
func (m topModel) body(v topView) viewBody {
	switch v {
	case viewSources:
		return m.sourcesBody()
	case viewAgents:
		return agentsBody(m.last)
	case viewCharges:
		return chargesBody(m.last)
	}
	return m.classesBody()
}

// interval is the time between the two samples, 0 when they give no
// rate: the first frame, or counters that started again (an attachment
// gone or made again, clear counters).
func (m topModel) interval() float64 {
	secs := m.last.at.Sub(m.prev.at).Seconds()
	if m.prev.at.IsZero() || secs <= 0 || m.last.total.Below(m.prev.total) {
		return 0
	}
	return secs
}

func (m topModel) classesBody() viewBody {
	secs := m.interval()
	d := m.last.total.Sub(m.prev.total)
	rate := func(n uint64) string {
		if secs == 0 {
			return "-"
		}
		return count(uint64(float64(n)/secs + 0.5))
	}
	caption := "per class: /s over the last " + strconv.FormatFloat(secs, 'f', 1, 64) + " s; totals since attach or clear counters"
	if secs == 0 {
		caption = "per class: /s from the next reading; totals since attach or clear counters"
	}
	t := tableSpec{cols: []colSpec{
		{title: "class", width: 12},
		{title: "seen/s", width: 8, right: true},
		{title: "admitted/s", width: 10, right: true},
		{title: "rejected/s", width: 10, right: true},
		{title: "admitted", width: 10, right: true},
		{title: "rejected", width: 10, right: true},
		{title: "rejected by", width: 12, flex: true},
	}}
	for _, c := range cac.Classes() {
		cs, all := d.Classes[c], m.last.total.Classes[c]
		by := cs
		if secs == 0 {
			by = all
		}
		t.rows = append(t.rows, []string{c.String(), rate(cs.Seen()), rate(cs.Admitted), rate(cs.RejectedTotal()),
			count(all.Admitted), count(all.RejectedTotal()), reasonsBy(by)})
	}
	captions := []string{caption}
	if line, ok := m.deniedLine(rate); ok {
		captions = append(captions, line)
	}
	return viewBody{caption: captions, main: t}
}

// deniedLine says how many sources the deny table holds now and the
// frames of denied sources dropped a second, by the deny lists and by
// the deny table (docs/design.md, "Access control"); nothing while there
// is no deny table and no frame was ever denied.
func (m topModel) deniedLine(rate func(uint64) string) (string, bool) {
	t, d, all := m.last.snap.DenyTable, m.last.total.Sub(m.prev.total), m.last.total
	if t == nil && all.DeniedStatic == 0 && all.DeniedAuto == 0 {
		return "", false
	}
	sources := "-"
	if t != nil {
		sources = count(t.Sources)
	}
	return fmt.Sprintf("denied: %s sources now; frames/s %s by deny lists, %s by the deny table",
		sources, rate(d.DeniedStatic), rate(d.DeniedAuto)), true
}

// reasonsBy names the reasons that rejected calls of a class, most first.
func reasonsBy(cs maps.ClassStats) string {
	rs := slices.DeleteFunc(cac.Reasons(), func(r cac.Reason) bool { return cs.Rejected[r] == 0 })
	slices.SortStableFunc(rs, func(a, b cac.Reason) int { return cmp.Compare(cs.Rejected[b], cs.Rejected[a]) })
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.String()
	}
	return strings.Join(names, ", ")
}

func (m topModel) sourcesBody() viewBody {
	order := "count"
	if m.byRate {
		order = "rate"
	}
	t := tableSpec{
		cols: []colSpec{
			{title: "source", width: 16, flex: true},
			{title: "interface", width: 9},
			{title: "class", width: 12},
			{title: "reason", width: 15},
			{title: "rejected/s", width: 10, right: true},
			{title: "in " + strconv.Itoa(rejectWindowSecs) + " s", width: 9, right: true},
		},
		empty: "no source rejected in the last " + strconv.Itoa(rejectWindowSecs) + " s",
	}
	srcs := m.window.sources(m.last.second, m.byRate)
	// With one interface, the title names it: its column goes, and the
	// source, a MAC with its VLANs or an IPv6 address, gets the room.
	one := len(m.known) <= 1
	if one {
		t.cols = slices.Delete(t.cols, 1, 2)
	}
	for _, r := range srcs {
		row := []string{r.source, r.iface, r.class.String(), r.reason.String(), count(r.rate), count(r.count)}
		if one {
			row = slices.Delete(row, 1, 2)
		}
		t.rows = append(t.rows, row)
	}
	return viewBody{
		caption: []string{fmt.Sprintf("rejected sources: /s in the last full second, rejects in the last %d s, by %s",
			rejectWindowSecs, order)},
		main: t,
	}
}

func agentsBody(s Sample) viewBody {
	t := tableSpec{cols: []colSpec{
		{title: "agent", width: 10},
		{title: "destination", width: 20},
		{title: "realm", width: 10},
		{title: "service", width: 7},
		{title: "since", width: 8, right: true},
		{title: "fails", width: 5, right: true},
		{title: "reason", width: 12, flex: true},
	}}
	rows := slices.Clone(s.agents)
	slices.SortFunc(rows, func(a, b agents.Row) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), a.Destination.Compare(b.Destination), cmp.Compare(a.Realm, b.Realm))
	})
	out := 0
	for _, r := range rows {
		service := "in"
		if !r.Status.InService {
			service, out = "OUT", out+1
		}
		since := "-"
		if !r.Status.Since.IsZero() {
			since = s.at.Sub(r.Status.Since).Round(time.Second).String()
		}
		t.rows = append(t.rows, []string{r.Agent, r.Destination.String(), r.Realm, service, since, strconv.Itoa(r.Status.Failures), r.Status.Reason})
	}
	caption := fmt.Sprintf("session agents: %d target(s), %d out of service", len(rows), out)
	switch {
	case !s.daemon:
		caption, t.empty = "session agents: no cacctl run serves "+s.stateDir, "none: the daemon watches the session agents"
	case len(rows) == 0:
		t.empty = "none: the configuration names no session agent"
	}
	b := viewBody{caption: []string{caption}, main: t}
	if len(s.egress) > 0 {
		b.fixed = append(b.fixed, egressTable(s.egress))
	}
	return b
}

// egressTable is what egress admission did with the INVITEs the SIP
// server sent toward each agent (docs/design.md, "Egress admission").
func egressTable(rows []agents.Egress) tableSpec {
	t := tableSpec{cols: []colSpec{
		{title: "egress", width: 10},
		{title: "conn limit", width: 10},
		{title: "when out", width: 9},
		{title: "sent", width: 8, right: true},
		{title: "over limit", width: 10, right: true},
		{title: "agent out", width: 9, right: true},
		{title: "at capacity", width: 11, right: true},
		{title: "sessions", width: 10, right: true},
		{title: "unanswered", width: 10, right: true},
	}}
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b agents.Egress) int { return cmp.Compare(a.Agent, b.Agent) })
	for _, e := range rows {
		conn := "-"
		if e.ConnectionCPS > 0 {
			conn = show.Num(e.ConnectionCPS) + "/s"
		}
		down := e.OnOutOfService
		if e.OutOfService {
			down = "HELD OUT"
		}
		sessions := "-"
		if e.MaxSessions > 0 {
			sessions = fmt.Sprintf("%d/%d", e.Sessions, e.MaxSessions)
		}
		t.rows = append(t.rows, []string{e.Agent, conn, down, strconv.FormatUint(e.Invites, 10),
			strconv.FormatUint(e.Connection, 10), strconv.FormatUint(e.AgentDown, 10), strconv.FormatUint(e.Capacity, 10),
			sessions, strconv.FormatUint(e.Unanswered, 10)})
	}
	return t
}

func chargesBody(s Sample) viewBody {
	var b viewBody
	v := s.snap.CallAdmission
	switch {
	case v == nil:
		b.caption = []string{"call admission: nothing attached"}
	case !v.Operational:
		b.caption = []string{"call admission: not operational"}
	default:
		line := fmt.Sprintf("call admission, old model: charges %s of %s (session %s, load %s); CPU %s%%",
			show.Num(v.TotalCharges), show.Num(v.Limit), show.Num(v.SessionCharges), show.Num(v.LoadCharge), show.Num(v.CPUPercent))
		if v.NewModel {
			limit := "no limit"
			if v.CPULimitPercent > 0 {
				limit = "limit " + show.Num(v.CPULimitPercent) + "%"
			}
			line = fmt.Sprintf("call admission, new model: session charges %s of %s; CPU %s%% (%s)",
				show.Num(v.SessionCharges), show.Num(v.Limit), show.Num(v.CPUPercent), limit)
		}
		if v.BuffersFull {
			line += "; receive buffers FULL"
		}
		b.caption = []string{line, controlPlaneLine(v)}
		ct := tableSpec{cols: []colSpec{
			{title: "call type", width: 10},
			{title: "charge", width: 8, right: true},
			{title: "lifetime s", width: 10, right: true},
			{title: "in force", width: 10, right: true},
		}}
		for _, t := range cac.CallTypeNames() {
			if c, ok := v.Charges[t]; ok {
				ct.rows = append(ct.rows, []string{t, strconv.Itoa(int(c.Charge)), show.Num(c.LifetimeS), count(c.InForce)})
			}
		}
		if len(ct.rows) > 0 {
			b.fixed = []tableSpec{ct}
		}
	}
	if st := sessionsTable(s.snap); len(st.rows) > 0 {
		b.fixed = append(b.fixed, st)
	}
	if f := s.fleet; f.Configured {
		b.caption = append(b.caption, fmt.Sprintf("fleet %s as %s: %s, %d members, Redis round trip %s µs, on-fleet-lost %s",
			f.Name, f.Member, f.State, f.Members, count(uint64(max(0, f.RedisRTTUS))), f.OnFleetLost))
		ft := tableSpec{cols: []colSpec{
			{title: "fleet limit", width: 18, flex: true},
			{title: "cps", width: 8, right: true},
			{title: "held", width: 8, right: true},
			{title: "granted", width: 10, right: true},
			{title: "spent", width: 10, right: true},
			{title: "expired", width: 8, right: true},
			{title: "demand/s", width: 9, right: true},
		}}
		for _, l := range f.Limits {
			ft.rows = append(ft.rows, []string{l.Name, show.Num(l.CPS), strconv.FormatInt(l.Tokens, 10),
				count(uint64(max(0, l.Granted))), count(uint64(max(0, l.Spent))), count(uint64(max(0, l.Expired))), show.Num(l.DemandCPS)})
		}
		if len(ft.rows) > 0 {
			b.fixed = append(b.fixed, ft)
		}
	}
	b.main = tableSpec{
		cols: []colSpec{
			{title: "bucket", width: 12},
			{title: "tokens", width: 8, right: true},
			{title: "burst", width: 8, right: true},
			{title: "fill", width: 20, flex: true, bar: true},
		},
		empty: "no bucket",
	}
	for _, bk := range s.snap.Buckets {
		name := bk.Level
		if bk.Class != "" {
			name = bk.Class
		}
		fill := 0.0
		if bk.Burst > 0 {
			fill = min(bk.Tokens/bk.Burst, 1)
		}
		b.main.rows = append(b.main.rows, []string{name, show.Num(bk.Tokens), show.Num(bk.Burst), strconv.Itoa(int(fill*1000 + 0.5))})
	}
	return b
}

// sessionsTable is the accounts and customers with max-sessions and the
// dialogs that hold their sessions (docs/design.md, "Capacity").
func sessionsTable(snap collector.Snapshot) tableSpec {
	t := tableSpec{cols: []colSpec{
		{title: "sessions of", width: 24},
		{title: "held", width: 8, right: true},
		{title: "max", width: 8, right: true},
	}}
	for _, a := range snap.Accounts {
		if a.Sessions.Max > 0 {
			t.rows = append(t.rows, []string{a.Customer + " / " + a.Account, count(a.Sessions.Held), strconv.FormatUint(uint64(a.Sessions.Max), 10)})
		}
	}
	for _, c := range snap.Customers {
		if c.Sessions.Max > 0 {
			t.rows = append(t.rows, []string{c.Customer, count(c.Sessions.Held), strconv.FormatUint(uint64(c.Sessions.Max), 10)})
		}
	}
	return t
}

// bar draws a fill of thousandths as width characters.
func bar(thousandths string, width int) string {
	n, _ := strconv.Atoi(thousandths)
	n = min(max(n, 0), 1000)
	full := (n*width + 500) / 1000
	return strings.Repeat("#", full) + strings.Repeat(".", width-full)
}

func controlPlaneLine(v *maps.CallAdmissionView) string {
	switch {
	case v.HeartbeatAgeMS == nil:
		return "control plane: none (no cacctl run): CPU and buffers are not measured"
	case v.Stale:
		return fmt.Sprintf("control plane: STALE, last heartbeat %s ago; on-stale %s applies", show.MsAge(*v.HeartbeatAgeMS), v.OnStale)
	}
	return fmt.Sprintf("control plane: heartbeat %s ago (stale after %s s, on-stale %s)",
		show.MsAge(*v.HeartbeatAgeMS), show.Num(float64(v.StaleAfterMS)/1000), v.OnStale)
}

// count prints a counter whole while it fits a column, then in K, M, G.
func count(n uint64) string {
	if n < 10_000_000 {
		return strconv.FormatUint(n, 10)
	}
	v, unit := float64(n), ""
	for _, u := range []string{"K", "M", "G", "T", "P"} {
		if v < 1000 {
			break
		}
		v, unit = v/1000, u
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + unit
}
