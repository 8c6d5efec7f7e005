package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/control"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// logLine is a line of the daemon's rejects log.
type logLine struct {
	Class, Reason, Source, Interface string
	Count                            uint64
}

// readRejectsLog reads the lines of a rejects log written so far; a line
// being written (no newline yet) is left for the next read.
func readRejectsLog(t *testing.T, path string) []logLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	text := string(data)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	} else {
		text = ""
	}
	var out []logLine
	for _, l := range strings.Split(text, "\n") {
		if l == "" {
			continue
		}
		var r logLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("rejects log line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// sumByReason adds up the counts of a log's lines by class and reason.
func sumByReason(lines ...[]logLine) map[string]uint64 {
	out := map[string]uint64{}
	for _, ls := range lines {
		for _, l := range ls {
			out[l.Class+" "+l.Reason] += l.Count
		}
	}
	return out
}

// padiFrom is a PADI from a MAC of its own for each i, padiSource(i).
func padiFrom(i int) []byte {
	return Frame(Ether{Broadcast: true, Src: [6]byte{0x02, 0x00, 0x5e, 0x10, byte(i >> 8), byte(i)}}, PPPoE{Code: PADI})
}

// padiSource is the source padiFrom(i) has in a reject record.
func padiSource(i int) string { return fmt.Sprintf("02:00:5e:10:%02x:%02x", byte(i>>8), byte(i)) }

// TestRejectsLogOneOffs: 209 sources rejected once each, in one second,
// are all in the daemon's rejects log, though none of them is ever
// rejected again: nothing but the clock moves their second to the log.
// How long after that second's end the last came is logged.
func TestRejectsLogOneOffs(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	tb.Until(t, "class", 5*time.Second) // the bucket is empty: every PADI is rejected
	const sources = 209
	frames := make([][]byte, sources)
	want := map[string]bool{}
	for i := range frames {
		frames[i] = padiFrom(i)
		want[padiSource(i)] = true
	}
	// In one second of the fast path's clock, early in it, most likely:
	// the log has them either way.
	now := control.MonotonicCoarse()
	time.Sleep(time.Duration(1e9-now%1e9) + 100*time.Millisecond)
	start := control.MonotonicCoarse()
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	sent := control.MonotonicCoarse()
	if sent/1e9 != start/1e9 {
		t.Logf("sending took from %d to %d ns: over a second's boundary", start, sent)
	}
	end := (sent/1e9 + 1) * 1e9                // the end of the last second sent in
	giveUp := control.MonotonicCoarse() + 60e9 // a minute, so that a lost one fails
	found := map[string]uint64{}               // source: when it was first seen
	for {
		at := control.MonotonicCoarse()
		// Each read is of the whole log: a source is in it twice only if
		// this one read has it twice; one seen by an earlier read keeps the
		// time it was first seen.
		inRead := map[string]bool{}
		for _, l := range readRejectsLog(t, d.RejectsLog) {
			if !want[l.Source] {
				continue
			}
			if l.Count != 1 || l.Class != "pppoe-padi" || l.Reason != "class" {
				t.Errorf("line %+v: want one PADI rejected by class", l)
			}
			if inRead[l.Source] {
				t.Errorf("%s twice in the log", l.Source)
			}
			inRead[l.Source] = true
			if _, ok := found[l.Source]; !ok {
				found[l.Source] = at
			}
		}
		if len(found) == sources || at > giveUp {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var last uint64
	for _, at := range found {
		last = max(last, at)
	}
	t.Logf("%d of %d sources in the log, the last %.3f s after its second's end", len(found), sources,
		float64(int64(last)-int64(end))/1e9)
	if len(found) != sources {
		t.Fatalf("%d of %d one-off rejects in the log a minute after", len(found), sources)
	}

	// show rejects has them too, from the daemon.
	out, stderr, err := tb.Cacctl(t, "show", "rejects", "--class", "pppoe-padi", "-o", "json")
	if err != nil {
		t.Fatalf("show rejects: %v: %s", err, stderr)
	}
	shown := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r logLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("show rejects line %q: %v", l, err)
		}
		if want[r.Source] {
			shown++
		}
	}
	if shown != sources {
		t.Errorf("show rejects lists %d of the %d sources", shown, sources)
	}
}

// TestRejectsLogStorm: a storm of PADIs from more sources than a CPU makes
// records for in a second, rejected by their per-source bucket and by the
// class, over several seconds: once it is over, the counts in the log add
// up, class by class and reason by reason, to the rejects show stats
// counts.
func TestRejectsLogStorm(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"cpu: {sample-interval: 200ms}\n"+
		"classes:\n  pppoe-padi: {cps: 0.001, burst: 100, per-source: {cps: 0.001, burst: 1}}\n"))
	const sources = 1500
	frames := make([][]byte, sources)
	for i := range frames {
		frames[i] = padiFrom(i)
	}
	for range 3 {
		testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
		time.Sleep(400 * time.Millisecond)
	}
	var seen uint64
	testenv.WaitFor(t, func() bool { // every frame counted
		s := tb.Stats(t).Classes["pppoe-padi"].Seen
		done := s == seen
		seen = s
		return done && s > 0
	})
	want := tb.StatsByReason(t)
	if want["pppoe-padi source"] == 0 || want["pppoe-padi class"] == 0 {
		t.Fatalf("rejects %v: want some by source and some by class", want)
	}
	var got map[string]uint64
	var lines []logLine
	testenv.Poll(4*time.Second, 50*time.Millisecond, func() bool {
		lines = readRejectsLog(t, d.RejectsLog)
		got = sumByReason(lines)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	others := 0
	for _, l := range lines {
		if l.Source == "other sources" {
			others++
		}
	}
	t.Logf("%d frames seen, %d lines in the log (%d of other sources), rejects %v", seen, len(lines), others, want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the log counts %v, show stats %v", got, want)
	}
}

// TestRejectsLogHandOver: a daemon stopped leaves the records of its last
// seconds in the pinned table; the next one writes them, once. The two
// logs together count every reject show stats counts.
func TestRejectsLogHandOver(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, lifeConfig(tb, 1, ""))
	first := tb.StartDaemon(t, cfg)
	tb.Until(t, "class", 5*time.Second)
	frames := make([][]byte, 50)
	for i := range frames {
		frames[i] = padiFrom(i)
	}
	seen := tb.Stats(t).Classes["pppoe-padi"].Seen
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	// The first daemon writes these once their second is swept, 1 to 2 s
	// after it ends: waited for, not slept on, so a slow sweep is not
	// taken for a record it never wrote.
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == seen+uint64(len(frames)) })
	early := tb.StatsByReason(t)
	if !testenv.Poll(5*time.Second, 50*time.Millisecond, func() bool {
		return fmt.Sprint(sumByReason(readRejectsLog(t, first.RejectsLog))) == fmt.Sprint(early)
	}) {
		t.Fatalf("the first daemon wrote %v of the rejects %v", sumByReason(readRejectsLog(t, first.RejectsLog)), early)
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	if err := first.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first daemon on SIGTERM: %v", err)
	}
	want := tb.StatsByReason(t)
	before := readRejectsLog(t, first.RejectsLog)
	if sum := sumByReason(before)["pppoe-padi class"]; sum == 0 || sum >= want["pppoe-padi class"] {
		t.Fatalf("the first daemon wrote %d of %d rejects: want the first 50 and not the last", sum, want["pppoe-padi class"])
	}

	second := tb.StartDaemon(t, cfg)
	// A reject after the hand-over is the marker: once its second is in
	// the log, the sweeps that would write a handed-over record twice are
	// done, and the two logs must count each reject once.
	n := len(frames)
	marker := padiSource(n)
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{padiFrom(n)})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == seen+uint64(2*n)+1 })
	want = tb.StatsByReason(t)
	var after []logLine
	if !testenv.Poll(time.Minute, 50*time.Millisecond, func() bool {
		after = readRejectsLog(t, second.RejectsLog)
		return slices.ContainsFunc(after, func(l logLine) bool { return l.Source == marker })
	}) {
		t.Fatalf("the marker's reject is not in the second daemon's log a minute after")
	}
	if got := sumByReason(before, after); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the two logs count %v (the first %v), show stats %v", got, sumByReason(before), want)
	}
	if !slices.ContainsFunc(after, func(l logLine) bool { return l.Source != marker }) {
		t.Errorf("the second daemon wrote none of the first one's records")
	}
}
