package peers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The run of the receiver differential: messages go out one at a time
// with the filter's charge read for each, Kamailio's log is read once a
// batch, and each message is judged once Kamailio's answer is in.

// fzGrace is how long after a batch's sentinels were logged it is
// judged: Kamailio's last lines of it have come by then.
const fzGrace = 200 * time.Millisecond

// fzSynced is a batch and when its sentinels were logged.
type fzSynced struct {
	cases []*fzCase
	at    time.Time
}

// fzRun sends messages in batches and judges each once Kamailio's log
// has its answer.
type fzRun struct {
	b            *fzBed
	record       bool
	cur          []*fzCase
	synced       []fzSynced // batches Kamailio had read, awaiting judgement
	byMarker     map[string]*fzCase
	sent, late   int
	kamN, sipgoN int
	tally        map[string]int // filter's charge by who read a request
	findings     map[string][]*fzCase
	findingN     map[string]int
	conflicts    map[string][]*fzCase
	conflictN    map[string]int
	recorded     []string
	mutTally     map[string]map[string]int // by kind of finding, the mutations that made it
	examples     int                       // per kind of finding
	panics       []*fzCase
	encapN       map[string][2]int // by kind of encapsulation: sent, and handled by Kamailio
	hidden       int               // receivers' requests in fragments charged malformed, as they may be
}

func newFzRun(b *fzBed, record bool) *fzRun {
	return &fzRun{b: b, record: record, byMarker: map[string]*fzCase{}, tally: map[string]int{},
		findings: map[string][]*fzCase{}, findingN: map[string]int{},
		conflicts: map[string][]*fzCase{}, conflictN: map[string]int{}, mutTally: map[string]map[string]int{},
		encapN: map[string][2]int{}}
}

// add sends c and reads it with sipgo; every fzBatch messages it syncs.
func (r *fzRun) add(t *testing.T, c *fzCase) {
	src := r.b.v4
	if c.v6 {
		src = r.b.v6
	}
	c.filter = r.b.send(t, r.b.frames(src, c))
	c.sipgo = fzSipgo(c.msg)
	c.kam = fzReading{why: "not handled"}
	if fzNulMethod(c.msg) {
		c.kam.why = "not known (a NUL in the method cuts its log line short of the Call-ID)"
	}
	r.byMarker[c.marker] = c
	r.cur = append(r.cur, c)
	r.sent++
	if len(r.cur) == fzBatch {
		r.cycle(t, false)
	}
}

// fzNulMethod reports whether Kamailio's method has a NUL in it.
func fzNulMethod(msg []byte) bool { return strings.IndexByte(fzKamMethod(msg), 0) >= 0 }

// cycle syncs with Kamailio and judges the batches synced fzGrace ago
// or before: a worker that took a message before the sentinel may log
// it after, when the scheduler left it waiting.
func (r *fzRun) cycle(t *testing.T, force bool) {
	for _, q := range r.b.sync(t) {
		c := r.byMarker[fzMarker.FindString(q.CallID)]
		if c == nil {
			if r.late++; r.late <= 10 {
				t.Logf("Kamailio logged %q after its message was judged, or a Call-ID without a marker", q.CallID)
			}
			continue
		}
		c.kam = fzReading{request: true, method: q.Method, tag: q.ToTag, tagged: q.ToTag != ""}
	}
	now := time.Now()
	r.synced = append(r.synced, fzSynced{r.cur, now})
	r.cur = nil
	for len(r.synced) > 0 && (force || now.Sub(r.synced[0].at) >= fzGrace) {
		for _, c := range r.synced[0].cases {
			r.judge(t, c)
			delete(r.byMarker, c.marker)
		}
		r.synced = r.synced[1:]
	}
}

// finish judges what is left.
func (r *fzRun) finish(t *testing.T) {
	r.cycle(t, false)
	time.Sleep(fzGrace)
	r.cycle(t, true)
}

// judge holds c to the invariant.
func (r *fzRun) judge(t *testing.T, c *fzCase) {
	who := "none"
	if c.kam.request {
		who, r.kamN = "kamailio", r.kamN+1
	}
	if c.sipgo.request {
		r.sipgoN++
		who = map[string]string{"none": "sipgo", "kamailio": "both"}[who]
	}
	if strings.HasPrefix(c.sipgo.why, "panicked") {
		r.panics = append(r.panics, c)
	}
	r.tally[who+"\x00"+c.filter]++
	r.tallyEncap(c)
	var probs []string
	conflict := true
	add := func(p string, c bool) {
		if p != "" {
			probs, conflict = append(probs, p), conflict && c
		}
	}
	// A first fragment that cannot show a receiver's method may be charged
	// malformed (fzHidden); that receiver is not held to more.
	if c.kam.request && fzHidden(c, true) || c.sipgo.request && fzHidden(c, false) {
		r.hidden++
	}
	if c.kam.request && !fzHidden(c, true) {
		alt, altName := "", ""
		if c.sipgo.request {
			alt, altName = c.sipgo.method, "sipgo"
		}
		add(fzCheck("Kamailio", c.kam, c.filter, alt, altName))
	}
	if c.sipgo.request && !fzHidden(c, false) {
		// Kamailio's method even when it refused the message for
		// something later in it: the filter cannot know that.
		alt, altName := c.kam.method, "Kamailio"
		if !c.kam.request {
			alt, altName = fzKamMethod(c.msg), "Kamailio's first line parser (it refused the message)"
		}
		add(fzCheck("sipgo", c.sipgo, c.filter, alt, altName))
	}
	if c.replayed {
		verdict := "passes"
		if len(probs) > 0 {
			verdict = map[bool]string{false: "FINDING: ", true: "conflict: "}[conflict] + strings.Join(probs, "; ")
		}
		t.Logf("%s %s\n    Kamailio: %s; sipgo: %s; filter: %s", c.origin, verdict, c.kam, c.sipgo, c.filter)
	}
	if len(probs) == 0 {
		return
	}
	// One kind of finding is one set of problems; its examples differ in
	// the mutations that made them.
	sig := strings.Join(probs, "; ")
	n, ex := r.findingN, r.findings
	if conflict {
		n, ex = r.conflictN, r.conflicts
	}
	n[sig]++
	kinds := fzKinds(c.muts)
	if r.mutTally[sig] == nil {
		r.mutTally[sig] = map[string]int{}
	}
	for _, k := range strings.Split(kinds, ",") {
		r.mutTally[sig][k]++
	}
	if len(ex[sig]) >= r.examples || slices.ContainsFunc(ex[sig], func(o *fzCase) bool { return fzKinds(o.muts) == kinds }) {
		return
	}
	ex[sig] = append(ex[sig], c)
	if r.record && !conflict && !c.replayed {
		r.recorded = append(r.recorded, fzWriteCorpus(t, c, sig))
	}
}

// fzKinds is the kinds of mutation in muts, sorted, without their details.
func fzKinds(muts []string) string {
	var k []string
	for _, m := range muts {
		name, _, _ := strings.Cut(m, ":")
		k = append(k, name)
	}
	sort.Strings(k)
	return strings.Join(k, ",")
}

func fzDescribe(c *fzCase) string {
	fam := "IPv4"
	if c.v6 {
		fam = fmt.Sprintf("IPv6, %d extension headers", len(c.ext))
	}
	if e := c.encap.String(); e != "" {
		fam += ", " + e
	}
	return fmt.Sprintf("  %s (%s), mutations %s\n    Kamailio: %s\n    sipgo:    %s\n    filter:   %s\n    message (%d bytes): %q\n",
		c.origin, fam, strings.Join(c.muts, "; "), c.kam, c.sipgo, c.filter, len(c.msg), c.msg)
}

// report logs the figures, the conflicts and the findings, failing t on
// any finding.
func (r *fzRun) report(t *testing.T, elapsed time.Duration) {
	var rows []string
	for k, n := range r.tally {
		who, filter, _ := strings.Cut(k, "\x00")
		rows = append(rows, fmt.Sprintf("  %-9s %-26s %7d", who, filter, n))
	}
	sort.Strings(rows)
	t.Logf("%d messages in %v: Kamailio handled %d, sipgo read %d as requests; %d late log lines\n"+
		"  read by   filter charged              messages\n%s",
		r.sent, elapsed.Round(time.Millisecond), r.kamN, r.sipgoN, r.late, strings.Join(rows, "\n"))
	t.Logf("by encapsulation, messages sent and handled by Kamailio:\n%s\n"+
		"  %d requests a receiver took were in fragments whose first cannot show its method, charged malformed",
		r.encapReport(), r.hidden)
	for _, c := range r.panics[:min(len(r.panics), fzExamples)] {
		t.Logf("sipgo panicked (%d messages in all):\n%s", len(r.panics), fzDescribe(c))
	}
	show := func(what string, n map[string]int, ex map[string][]*fzCase) (total int) {
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
			total += n[k]
		}
		sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
		for _, k := range keys {
			var b strings.Builder
			var muts []string
			for m, n := range r.mutTally[k] {
				muts = append(muts, fmt.Sprintf("%s %d", m, n))
			}
			sort.Strings(muts)
			for _, c := range ex[k] {
				b.WriteString(fzDescribe(c))
			}
			t.Logf("%s, %d messages: %s\n  made with: %s\n%s", what, n[k], k, strings.Join(muts, ", "), b.String())
		}
		return total
	}
	conflicts := show("receivers conflict (the filter follows one)", r.conflictN, r.conflicts)
	findings := show("FINDING", r.findingN, r.findings)
	t.Logf("%d findings of %d kinds, %d conflicts of %d kinds", findings, len(r.findingN), conflicts, len(r.conflictN))
	if len(r.recorded) > 0 {
		t.Logf("recorded in %s: %s", fzCorpusDir, strings.Join(r.recorded, " "))
	}
	if findings > 0 {
		t.Errorf("%d messages a receiver took for a request were not charged as it reads them (above)", findings)
	}
}

// fzEncapKinds are the kinds of encapsulation mutation.
var fzEncapKinds = []string{"vlan", "ipv4-options", "v6-exts", "fragment"}

// tallyEncap counts c under each kind of encapsulation it was sent in, or
// none, by family: how often Kamailio handled each, against the plain
// frame's figure, tells whether the kernel handed such frames on at all,
// for a kind it drops tests nothing.
func (r *fzRun) tallyEncap(c *fzCase) {
	kinds := []string{}
	for _, k := range strings.Split(fzKinds(c.muts), ",") {
		if slices.Contains(fzEncapKinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	for _, k := range kinds {
		k += map[bool]string{false: " IPv4", true: " IPv6"}[c.v6]
		n := r.encapN[k]
		n[0]++
		if c.kam.request {
			n[1]++
		}
		r.encapN[k] = n
	}
}

func (r *fzRun) encapReport() string {
	var rows []string
	for _, k := range append([]string{"none"}, fzEncapKinds...) {
		for _, fam := range []string{" IPv4", " IPv6"} {
			if n := r.encapN[k+fam]; n[0] > 0 {
				rows = append(rows, fmt.Sprintf("  %-18s %7d %7d (%.1f%%)", k+fam, n[0], n[1], 100*float64(n[1])/float64(n[0])))
			}
		}
	}
	return strings.Join(rows, "\n")
}
