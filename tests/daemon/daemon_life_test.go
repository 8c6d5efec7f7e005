package daemon

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// lifeConfig is a daemon's file with a PADI class bucket of burst calls
// that does not refill within a test.
func lifeConfig(tb *harness.Testbed, burst int, extra string) string {
	return harness.E2eConfig + "interfaces: [{name: " + tb.BoxIface + "}]\n" +
		"cpu: {sample-interval: 200ms}\n" +
		"classes:\n  pppoe-padi: {cps: 0.001, burst: " + harness.Itoa(burst) + "}\n" + extra
}

// TestDaemonKillAndRestart: SIGKILL in the middle of a flood leaves the
// filter enforcing; a restarted daemon takes over the pinned state, with
// counters no lower and the bucket not refilled.
func TestDaemonKillAndRestart(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, lifeConfig(tb, 20, ""))
	d := tb.StartDaemon(t, cfg)
	frames := make([][]byte, 50)
	for i := range frames {
		frames[i] = harness.Padi
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	if err := d.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 100 })
	before := tb.Stats(t).Classes["pppoe-padi"]
	if before.Admitted != 20 || before.Reasons["class"] != 80 {
		t.Fatalf("flood across the kill: %+v, want 20 admitted and 80 rejected by class", before)
	}

	tb.StartDaemon(t, cfg)
	after := tb.Stats(t).Classes["pppoe-padi"]
	if after.Seen < before.Seen || after.Admitted < before.Admitted {
		t.Errorf("counters went back on restart: %+v, before %+v", after, before)
	}
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("after the restart a PADI is %s: the bucket was refilled", got)
	}
}

// TestDaemonApply: cacctl apply hands a file to the running daemon: new
// limits are in force when it returns, with counters kept; a broken file
// is refused with its line and changes nothing.
func TestDaemonApply(t *testing.T) {
	tb := harness.NewTestbed(t)
	tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 2, "")))
	for i := 0; i < 3; i++ {
		tb.PadiOutcome(t)
	}
	before := tb.Stats(t).Classes["pppoe-padi"]

	broken := harness.WriteConfig(t, lifeConfig(tb, 2, "environment: {cps: lots}\n"))
	_, stderr, err := tb.Cacctl(t, "apply", "--config", broken)
	if err == nil || !regexp.MustCompile(`cac.yaml:\d+:\d+: environment.cps`).MatchString(stderr) {
		t.Errorf("apply of a broken file: %v: %s", err, stderr)
	}
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("after the broken file a PADI is %s, want class (limits unchanged)", got)
	}

	higher := harness.WriteConfig(t, lifeConfig(tb, 10, ""))
	out, stderr, err := tb.Cacctl(t, "apply", "--config", higher)
	if err != nil || !strings.Contains(out, "running cacctl run") {
		t.Fatalf("apply: %v: %s%s", err, out, stderr)
	}
	// The daemon answers apply once the file is in force: the first PADI
	// after it meets the new limits. How long after is for the log, on
	// the fast path's clock.
	applied := control.MonotonicCoarse()
	got, sent := tb.PadiProbe(t)
	if got != "admitted" {
		t.Errorf("after apply a PADI is %s, want admitted", got)
	}
	t.Logf("a PADI %v after apply returned: %s", time.Duration(sent-applied), got)
	after := tb.Stats(t).Classes["pppoe-padi"]
	if after.Seen != before.Seen+2 || after.Reasons["class"] != before.Reasons["class"]+1 {
		t.Errorf("counters after apply %+v, before %+v", after, before)
	}
	out, _, err = tb.Cacctl(t, "status")
	if harness.StatusErr(err) != nil || !strings.Contains(out, higher) || !strings.Contains(out, "daemon: running") {
		t.Errorf("status after apply does not name the file in force:\n%s", out)
	}
}

// TestDaemonRefusals: a second daemon for the same state refuses and
// changes nothing.
func TestDaemonRefusals(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, lifeConfig(tb, 5, ""))
	first := tb.StartDaemon(t, cfg)
	_, stderr, err := tb.Cacctl(t, "run", "--config", cfg)
	if err == nil || !strings.Contains(stderr, "already running") || !strings.Contains(stderr, harness.Itoa(first.Pid())) {
		t.Errorf("second run: %v: %s", err, stderr)
	}
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Errorf("the first daemon's filter: PADI %s", got)
	}
	// detach takes the filter off even though the daemon holds its link.
	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach: %v: %s", err, stderr)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("after detach, with the daemon running, XDP program %d is still on", id)
	}
	// The daemon sees its held link detached and lets it go rather than
	// pin its state again.
	testenv.WaitFor(t, func() bool { return strings.Contains(first.Log.String(), "detached while the daemon runs") })
	// Not attached, though the file in force names it: degraded, and
	// named as detached rather than missing.
	v, degraded := statusReport(t, tb)
	if len(v.Interfaces) != 0 || !degraded || !has(v.Degraded, "interface "+tb.Box+":"+tb.BoxIface+" not attached") {
		t.Errorf("after detach, status: attachments %+v, degraded %v %q", v.Interfaces, degraded, v.Degraded)
	}
}

// TestDaemonInterfaceReturns: an interface deleted, seen gone by the
// daemon, and created again gets the filter back, with the state it had.
func TestDaemonInterfaceReturns(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 3, "")))
	for i := 0; i < 4; i++ {
		tb.PadiOutcome(t)
	}
	if out, err := exec.Command("ip", "-n", tb.Box, "link", "del", tb.BoxIface).CombinedOutput(); err != nil {
		t.Fatalf("delete %s: %v: %s", tb.BoxIface, err, out)
	}
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "interface gone; the filter returns with it") })
	testenv.VethNamed(t, tb.Box, tb.Peer, tb.BoxIface, tb.PeerIfc)
	back := time.Now()
	if !testenv.Poll(time.Minute, 20*time.Millisecond, func() bool { return harness.XdpProgID(t, tb.Box, tb.BoxIface) != 0 }) {
		t.Fatalf("no XDP program on %s a minute after it came back", tb.BoxIface)
	}
	t.Logf("attached again %v after the interface came back", time.Since(back))
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("after the interface came back a PADI is %s, want class: the bucket kept its state", got)
	}
}

// TestUpgrade: a daemon takes over an attachment running another program
// with an atomic link update and keeps the counters; a link update that
// fails, or a pinned map of another shape, leaves the running program.
func TestUpgrade(t *testing.T) {
	tb, cfg, a, dir := attachedForUpgrade(t)

	// Stand in an "old version": another program on the pinned link.
	old := harness.PassProgram(t, "old_version")
	l, err := link.LoadPinnedLink(filepath.Join(dir, "link"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Update(old); err != nil {
		t.Fatal(err)
	}
	oldID := harness.XdpProgID(t, tb.Box, tb.BoxIface)

	failing := loader.Options{StateDir: tb.State, UpdateLink: func(link.Link, *ebpf.Program) error { return syscall.EBUSY }}
	if _, err := loader.Adopt(a, failing); err == nil || !strings.Contains(err.Error(), "the running program stays") {
		t.Errorf("adopt with a failing link update: %v", err)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != oldID {
		t.Errorf("a failed update changed the program: %d, was %d", id, oldID)
	}

	d := tb.StartDaemon(t, cfg)
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id == oldID {
		t.Errorf("the daemon left the old program running")
	}
	if !strings.Contains(d.Log.String(), "program=upgraded") {
		t.Errorf("the daemon's log does not say it upgraded:\n%s", d.Log.String())
	}
	if s := tb.Stats(t).Classes["pppoe-padi"]; s.Seen != 1 {
		t.Errorf("counters after the upgrade: %+v, want the 1 PADI of before", s)
	}
	out, _, _ := tb.Cacctl(t, "status")
	if !regexp.MustCompile(`(?m) \d+ +this$`).MatchString(out) {
		t.Errorf("status after the upgrade:\n%s", out)
	}
	d.Signal(syscall.SIGTERM)
	d.Wait()

	// A pinned map of another shape: the upgrade is refused, nothing changes.
	if err := os.Remove(filepath.Join(dir, "settings")); err != nil {
		t.Fatal(err)
	}
	odd, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Close()
	if err := odd.Pin(filepath.Join(dir, "settings")); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(old); err != nil { // an old version again, to upgrade
		t.Fatal(err)
	}
	oldID = harness.XdpProgID(t, tb.Box, tb.BoxIface)
	_, stderr, err := tb.Cacctl(t, "run", "--config", cfg)
	if err == nil || !strings.Contains(stderr, "another shape") || !strings.Contains(stderr, "nothing was changed") {
		t.Errorf("run against a map of another shape: %v: %s", err, stderr)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != oldID {
		t.Errorf("the refused upgrade changed the program")
	}
}

// TestDaemonMetrics: the daemon serves /metrics with what the maps hold.
func TestDaemonMetrics(t *testing.T) {
	tb := harness.NewTestbed(t)
	tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 3, "metrics: {listen: \"127.0.0.1:0\"}\n")))
	tb.PadiOutcome(t)
	body := []byte(tb.Metrics(t))
	want := `xdpcac_packets_total{class="pppoe-padi",iface="` + tb.Box + ":" + tb.BoxIface + `",verdict="pass"} 1`
	if !strings.Contains(string(body), want) || !strings.Contains(string(body), "xdpcac_build_info") {
		t.Errorf("/metrics lacks %s:\n%s", want, body)
	}
	// make test unpacks promtool and names it; elsewhere one on PATH does,
	// and without one maps/collector's pedantic-registry test stands.
	promtool := os.Getenv("XDPCAC_PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		t.Log("no promtool: /metrics checked by the pedantic registry of maps/collector only")
		return
	}
	c := exec.Command(promtool, "check", "metrics")
	c.Stdin = strings.NewReader(string(body))
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	} else {
		t.Logf("promtool check metrics: passed %s", out)
	}
}

// TestDaemonSignals: SIGHUP reads the file again (a broken one changes
// nothing), SIGTERM leaves the filter attached, and a daemon started with
// --detach-on-exit over that attachment takes it over and removes it.
func TestDaemonSignals(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, lifeConfig(tb, 1, ""))
	d := tb.StartDaemon(t, cfg)
	tb.PadiOutcome(t)
	if got := tb.PadiOutcome(t); got != "class" {
		t.Fatalf("burst 1: second PADI %s", got)
	}

	rewrite := func(body string) {
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := d.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(lifeConfig(tb, 5, ""))
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "msg=reloaded") })
	if got := tb.PadiOutcome(t); got != "admitted" {
		t.Errorf("after SIGHUP with burst 5: PADI %s", got)
	}
	rewrite(lifeConfig(tb, 50, "on-stale: sometimes\n"))
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "reload refused") })
	for i := 0; i < 3; i++ {
		tb.PadiOutcome(t)
	}
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("after SIGHUP with a broken file: PADI %s, want class (burst 5 spent)", got)
	}
	out, _, _ := tb.Cacctl(t, "status")
	if !strings.Contains(out, "last reload refused") || !strings.Contains(out, "on-stale") {
		t.Errorf("status does not say the reload was refused:\n%s", out)
	}

	if err := d.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.Wait(); err != nil {
		t.Errorf("SIGTERM: the daemon exited with %v", err)
	}
	if harness.XdpProgID(t, tb.Box, tb.BoxIface) == 0 {
		t.Fatal("SIGTERM detached the filter")
	}
	if got := tb.PadiOutcome(t); got != "class" {
		t.Errorf("with the daemon stopped: PADI %s, want class", got)
	}

	if err := os.WriteFile(cfg, []byte(lifeConfig(tb, 5, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	d = tb.StartDaemon(t, cfg, "--detach-on-exit")
	if !strings.Contains(d.Log.String(), "program=kept") {
		t.Errorf("the second daemon did not take the attachment over:\n%s", d.Log.String())
	}
	d.Signal(syscall.SIGTERM)
	if err := d.Wait(); err != nil {
		t.Errorf("SIGTERM with --detach-on-exit: %v", err)
	}
	if id := harness.XdpProgID(t, tb.Box, tb.BoxIface); id != 0 {
		t.Errorf("--detach-on-exit left program %d", id)
	}
	if entries, _ := os.ReadDir(tb.State); len(entries) != 0 {
		t.Errorf("--detach-on-exit left state: %v", entries)
	}
}

// TestDaemonRejectsLog: a finished second of rejects goes from the rejects
// table to the daemon's log as a JSON line, and show rejects lists it
// beside the second in progress.
func TestDaemonRejectsLog(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, lifeConfig(tb, 1, "")))
	for i := 0; i < 4; i++ { // one admitted, three rejected
		tb.PadiOutcome(t)
	}
	type rejectLine struct {
		Class, Reason, Source, Interface string
		Count                            uint64
	}
	// linesOf decodes JSON lines. The three rejects fall in one second of
	// the coarse clock, or in two when a tick came between them: each
	// finished second is a line of its own.
	linesOf := func(text string) ([]rejectLine, error) {
		var out []rejectLine
		for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
			var r rejectLine
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	}
	var logged []rejectLine
	var sum uint64
	// A second is finished once the one after it is over too, and swept
	// at the journal's next look: some seconds, waited for as they come.
	logged3 := testenv.Poll(time.Minute, 20*time.Millisecond, func() bool {
		data, err := os.ReadFile(d.RejectsLog)
		if err != nil || len(data) == 0 {
			return false
		}
		if logged, err = linesOf(string(data)); err != nil {
			return false
		}
		sum = 0
		for _, l := range logged {
			sum += l.Count
		}
		return sum >= 3
	})
	if !logged3 {
		t.Fatalf("the rejects log holds %+v a minute after the rejects, want the 3 PADIs", logged)
	}
	// Their second is over, for the daemon logs only finished ones: a
	// reject now is of a later second, still in progress.
	tb.PadiOutcome(t)
	for _, l := range logged {
		if l.Class != "pppoe-padi" || l.Reason != "class" || l.Interface != tb.Box+":"+tb.BoxIface {
			t.Errorf("rejects log line: %+v, want PADIs rejected by class on %s:%s", l, tb.Box, tb.BoxIface)
		}
	}
	if sum != 3 {
		t.Errorf("rejects log lines %+v count %d rejects, want the 3 PADIs", logged, sum)
	}
	out, stderr, err := tb.Cacctl(t, "show", "rejects", "--class", "pppoe-padi", "-o", "json")
	if err != nil {
		t.Fatalf("show rejects: %v: %s", err, stderr)
	}
	shown, err := linesOf(out)
	if err != nil {
		t.Fatalf("show rejects -o json: %v\n%s", err, out)
	}
	var finished uint64
	for _, l := range shown[1:] {
		finished += l.Count
	}
	if len(shown) < 2 || shown[0].Count != 1 || finished != 3 {
		t.Errorf("show rejects %+v: want the second in progress (1), then the finished ones (3 in all)", shown)
	}

	// Rejects the fast path found no room for in the table are missing
	// from the log: the daemon says so. The count is raised by hand here,
	// as a table sized for every CPU's budget does not fill.
	p, err := loader.Open(tb.State, loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var perCPU []bpf.XdpCacStats
	if err := p.Stats.Lookup(uint32(0), &perCPU); err != nil {
		t.Fatal(err)
	}
	perCPU[0].RejectRecordsLost += 5
	if err := p.Stats.Update(uint32(0), perCPU, ebpf.UpdateExist); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, func() bool { return strings.Contains(d.Log.String(), "rejects are missing from the rejects log") })
	if !strings.Contains(d.Log.String(), "lost=5") {
		t.Errorf("the warning does not say how many were lost:\n%s", d.Log.String())
	}
}
