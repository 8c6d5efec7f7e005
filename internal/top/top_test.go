package top

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// sample is a top sample at t0+secs on eth1, with n PADIs admitted and
// 2n rejected by class.
func sample(secs int, n uint64) Sample {
	var s maps.Stats
	s.Classes[cac.PPPoEPADI].Admitted = n
	s.Classes[cac.PPPoEPADI].Rejected[cac.ReasonClass] = 2 * n
	return Sample{at: t0.Add(time.Duration(secs) * time.Second), second: 1000 + uint64(secs), total: s, snap: collector.Snapshot{
		Interfaces: map[string]maps.Stats{"eth1": s},
		Buckets:    []collector.Bucket{{Level: "class", Class: "pppoe-padi", Tokens: 5, Burst: 10}},
	}}
}

// reject is a record of n rejects of source in second.
func reject(source string, second, n uint64) maps.Reject {
	return maps.Reject{Second: second, Class: cac.SIPInvite, Reason: cac.ReasonSource, Source: source, Count: n, Interface: "eth1"}
}

// modelOf is a model that has read the samples in turn, sized w by h.
func modelOf(w, h int, ss ...Sample) topModel {
	m := newTopModel(nil, ss[0])
	for _, s := range ss[1:] {
		m = m.withSample(s, nil)
	}
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(topModel)
}

// press sends the keys to m in turn.
func press(m topModel, keys ...tea.KeyPressMsg) topModel {
	for _, k := range keys {
		next, _ := m.Update(k)
		m = next.(topModel)
	}
	return m
}

func key(r rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: r, Text: string(r)} }

// row is the fields of the line of s that starts with first.
func row(s, first string) []string {
	for _, l := range strings.Split(ansi.Strip(s), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == first {
			return f
		}
	}
	return nil
}

// TestTopFrame: rates are the counters' difference over the time between
// samples, the totals are since attach or clear counters, each in its own
// column; the bucket is drawn half full.
func TestTopFrame(t *testing.T) {
	m := modelOf(100, 40, sample(0, 100), sample(2, 300)) // 600 seen in 2 s
	out := m.View().Content
	want := "pppoe-padi 300 100 200 300 600 class"
	if got := strings.Join(row(out, "pppoe-padi"), " "); got != want {
		t.Errorf("classes: got %q, want %q:\n%s", got, want, out)
	}
	if !strings.Contains(out, "/s over the last 2.0 s; totals since attach or clear counters") {
		t.Errorf("the columns are not labelled:\n%s", out)
	}
	charges := press(m, key('4')).View().Content
	if f := row(charges, "pppoe-padi"); len(f) != 4 || f[1] != "5" || f[2] != "10" ||
		strings.Count(f[3], "#") == 0 || strings.Count(f[3], "#") != strings.Count(f[3], ".") {
		t.Errorf("bucket not drawn half full: %q\n%s", f, charges)
	}
	first := modelOf(80, 24, sample(0, 100)).View().Content
	if got := strings.Join(row(first, "pppoe-padi"), " "); got != "pppoe-padi - - - 100 200 class" {
		t.Errorf("first frame: %q", got)
	}
}

// TestTopKeys: a reading comes as a message and asks for the next; the
// digits and tab pick the views, each named in the footer; s toggles the
// order of the sources; q quits.
func TestTopKeys(t *testing.T) {
	n := uint64(0)
	m := newTopModel(func() (Sample, error) { n += 10; return sample(int(n), n), nil }, sample(0, 0))
	if m.Init() == nil {
		t.Fatal("Init asks for no reading")
	}
	next, cmd := m.Update(topSampleMsg{s: sample(1, 10)})
	if cmd == nil || next.(topModel).last.total.Classes[cac.PPPoEPADI].Admitted != 10 {
		t.Fatalf("a reading was not taken in: %+v", next)
	}
	m = next.(topModel)
	for _, k := range []tea.KeyPressMsg{key('1'), key('2'), key('3'), key('4'), {Code: tea.KeyTab}, {Code: tea.KeyTab, Mod: tea.ModShift}} {
		m = press(m, k)
		want := map[string]topView{"1": viewClasses, "2": viewSources, "3": viewAgents, "4": viewCharges, "tab": viewClasses, "shift+tab": viewCharges}[k.String()]
		if m.view != want {
			t.Errorf("%s: view %s, want %s", k, m.view, want)
		}
		footer := ansi.Strip(m.footer())
		for v := range numViews {
			if !strings.Contains(footer, fmt.Sprintf("%d %s", v+1, v)) {
				t.Errorf("footer lacks view %s: %q", v, footer)
			}
		}
	}
	if m = press(m, key('s')); !m.byRate || !strings.Contains(m.footer(), "s by rate") {
		t.Errorf("s does not sort by rate: %q", m.footer())
	}
	if m = press(m, key('s')); m.byRate {
		t.Error("s does not go back to count")
	}
	if _, cmd := m.Update(key('q')); cmd == nil || cmd() != tea.Quit() {
		t.Error("q does not quit")
	}
}

// TestTopSources: the sources are the biggest over the window, by count
// or by rate, not the latest; records the daemon took out of the table
// between readings still count, and those older than the window do not.
func TestTopSources(t *testing.T) {
	s1 := sample(0, 0)
	s1.rejects = []maps.Reject{
		reject("192.0.2.1", 1000-rejectWindowSecs, 500), // leaves the window
		reject("192.0.2.2", 996, 100),
		reject("192.0.2.3", 999, 30),
	}
	s2 := sample(1, 0) // second 1001: 996 and 999 were swept
	s2.rejects = []maps.Reject{reject("192.0.2.3", 1000, 40), reject("192.0.2.4", 1001, 1)}
	m := press(modelOf(100, 30, s1, s2), key('2'))
	order := func(m topModel) (got []string) {
		for _, r := range m.table.Rows() {
			got = append(got, r[0]+" "+strings.TrimSpace(r[len(r)-2])+" "+strings.TrimSpace(r[len(r)-1]))
		}
		return got
	}
	byCount := []string{"192.0.2.2 0 100", "192.0.2.3 40 70", "192.0.2.4 0 1"}
	if got := order(m); fmt.Sprint(got) != fmt.Sprint(byCount) {
		t.Errorf("by count: got %q, want %q", got, byCount)
	}
	byRate := []string{"192.0.2.3 40 70", "192.0.2.2 0 100", "192.0.2.4 0 1"}
	if got := order(press(m, key('s'))); fmt.Sprint(got) != fmt.Sprint(byRate) {
		t.Errorf("by rate: got %q, want %q", got, byRate)
	}
	if out := m.View().Content; !strings.Contains(out, "rejected/s") || !strings.Contains(out, "in 10 s") || strings.Contains(out, "interface") {
		t.Errorf("sources not labelled, or an interface column for one interface:\n%s", out)
	}
	// A second interface brings the column that tells them apart.
	s3 := sample(2, 0)
	s3.snap.Interfaces["eth2"] = maps.Stats{}
	next, _ := m.Update(topSampleMsg{s: s3})
	if out := next.(topModel).View().Content; !strings.Contains(out, "interface") || !strings.HasPrefix(strings.Join(row(out, "192.0.2.3"), " "), "192.0.2.3 eth1 ") {
		t.Errorf("no interface column with two interfaces:\n%s", out)
	}
}

// TestTopNotProtected: top says loudly when nothing is attached, when an
// attachment went away since it started, and when a link lost its
// interface, rather than counting interfaces.
func TestTopNotProtected(t *testing.T) {
	none := sample(1, 0)
	none.snap.Interfaces = map[string]maps.Stats{}
	defunct := sample(1, 0)
	defunct.defunct = []string{"eth1"}
	for _, c := range []struct {
		name string
		m    topModel
		want string
	}{
		{"none", modelOf(80, 24, none), "NOT PROTECTED: xdpcac is attached to no interface"},
		{"detached", modelOf(80, 24, sample(0, 0), none), "NOT PROTECTED: attached to no interface; detached since top started: eth1"},
		{"defunct", modelOf(80, 24, sample(0, 0), defunct), "NOT PROTECTED: the interface went away, nothing filters it: eth1"},
	} {
		if out := ansi.Strip(c.m.View().Content); !strings.Contains(out, c.want) || strings.Contains(out, "interface(s)") {
			t.Errorf("%s: no %q:\n%s", c.name, c.want, out)
		}
	}
	if out := ansi.Strip(modelOf(80, 24, sample(0, 0), sample(1, 0)).View().Content); strings.Contains(out, "NOT PROTECTED") {
		t.Errorf("protected, yet:\n%s", out)
	}
}

// crowded is a sample that fills every view past 80x24: many sources
// with long names, many agents, warnings.
func crowded() (Sample, Sample) {
	a, b := sample(0, 1e9), sample(1, 2e9)
	b.defunct = []string{"blue:eth2"}
	b.snap.DenyTable = &collector.DenyTable{Sources: 65536, Size: 65536}
	b.total.DeniedStatic, b.total.DeniedAuto = 1e9, 2e9
	for i := range 60 {
		b.rejects = append(b.rejects, reject(fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:ffff:%04x", i), 1000, uint64(i)))
		b.agents = append(b.agents, agents.Row{Agent: "carrier-with-a-long-name", Realm: "core-realm-long",
			Destination: netip.MustParseAddrPort(fmt.Sprintf("[2001:db8::%x]:5061", i)),
			Status:      agents.Status{Reason: "no answer to 3 OPTIONS pings in a row", Failures: 3}})
	}
	b.egress = []agents.Egress{
		{Agent: "vendor-a", ConnectionCPS: 5, ConnectionBurst: 5, OnOutOfService: "fail-fast", Invites: 101, Connection: 299},
		{Agent: "vendor-b", OnOutOfService: "fail-fast", OutOfService: true, AgentDown: 40},
	}
	b.daemon = true
	age := int64(12_300)
	b.snap.CallAdmission = &maps.CallAdmissionView{Operational: true, Limit: 100, TotalCharges: 42, SessionCharges: 30, LoadCharge: 12,
		CPUPercent: 55, HeartbeatAgeMS: &age, Stale: true, OnStale: "static",
		Charges: map[string]maps.ChargeView{"sip": {Charge: 2, LifetimeS: 30, InForce: 15}, "pppoe": {Charge: 1, LifetimeS: 60, InForce: 12}}}
	return a, b
}

// TestTopFits: at 80x24, and after resizes, no view passes the edge of
// the terminal, the title stays on the first line and the footer on the
// last.
func TestTopFits(t *testing.T) {
	a, b := crowded()
	m := modelOf(80, 24, a, b)
	for _, size := range [][2]int{{80, 24}, {132, 43}, {60, 15}, {80, 24}} {
		next, _ := m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		m = next.(topModel)
		for v := range numViews {
			m = press(m, key(rune('1'+v)))
			lines := strings.Split(m.View().Content, "\n")
			if len(lines) > size[1] {
				t.Errorf("%dx%d %s: %d lines", size[0], size[1], v, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%dx%d %s: line %d is %d wide: %q", size[0], size[1], v, i, w, ansi.Strip(l))
				}
			}
			if !strings.HasPrefix(lines[0], "xdpcac top") || !strings.Contains(lines[len(lines)-1], "quit") {
				t.Errorf("%dx%d %s: title or footer lost:\n%s", size[0], size[1], v, strings.Join(lines, "\n"))
			}
		}
	}
	// The table scrolls: down moves the cursor, and the frame still fits.
	m = press(m, key('2'), tea.KeyPressMsg{Code: tea.KeyDown}, tea.KeyPressMsg{Code: tea.KeyDown})
	if m.table.Cursor() != 2 || len(strings.Split(m.View().Content, "\n")) > 24 {
		t.Errorf("down: cursor %d", m.table.Cursor())
	}
}

// TestTopPlain: the frame of --once has every view, no escape code, and
// its lines end with no padding.
func TestTopPlain(t *testing.T) {
	a, b := crowded()
	out := modelOf(80, 24, a, b).plain(onceWidth)
	for _, want := range []string{"!! NOT PROTECTED: the interface went away, nothing filters it: blue:eth2", "per class: /s over the last 1.0 s", "rejected sources:", "session agents: 60 target(s)", "vendor-a   5/s", "HELD OUT", "pppoe-padi", "!! STALE control plane", "charges 42 of 100"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, '\x1b') {
		t.Errorf("escape codes in --once:\n%q", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " ") || ansi.StringWidth(l) > onceWidth {
			t.Errorf("padded or too wide: %q", l)
		}
	}
}

// TestChargesShowFleet: the charges view says the fleet's state and
// lists each fleet-scope limit's lease on this box.
func TestChargesShowFleet(t *testing.T) {
	s := Sample{fleet: api.Fleet{Configured: true, Name: "west", Member: "box1", State: "lost", Members: 10, OnFleetLost: "local",
		Limits: []api.FleetLimit{{Name: "customer/acme", CPS: 100, Tokens: 3, Granted: 1200, Spent: 1180, Expired: 17, DemandCPS: 20}}}}
	b := chargesBody(s)
	caption := strings.Join(b.caption, "\n")
	if !strings.Contains(caption, "fleet west as box1: lost, 10 members") {
		t.Errorf("caption: %s", caption)
	}
	last := b.fixed[len(b.fixed)-1]
	if len(last.rows) != 1 || last.rows[0][0] != "customer/acme" || last.rows[0][2] != "3" || last.rows[0][4] != count(1180) {
		t.Errorf("fleet table: %v", last.rows)
	}
	if b := chargesBody(Sample{}); len(b.fixed) != 0 {
		t.Errorf("a sample without a fleet drew %d tables", len(b.fixed))
	}
}

// TestTopDenied: the classes view says the sources denied now and the denied frames a second by deny lists and by
// the deny table; without a deny table or a denied frame it says nothing.
func TestTopDenied(t *testing.T) {
	a, b := sample(0, 100), sample(2, 300)
	b.total.DeniedStatic, b.total.DeniedAuto = 20, 60 // 10/s and 30/s
	b.snap.DenyTable = &collector.DenyTable{Sources: 7, Size: 1024}
	out := ansi.Strip(modelOf(100, 40, a, b).View().Content)
	if want := "denied: 7 sources now; frames/s 10 by deny lists, 30 by the deny table"; !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}
	if out := modelOf(100, 40, sample(0, 100), sample(2, 300)).View().Content; strings.Contains(out, "denied:") {
		t.Errorf("a denied line with nothing denied:\n%s", out)
	}
}
