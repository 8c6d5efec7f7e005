package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/daemon"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The box's realm and the session agent's address, on the test's veth;
// nothing answers at the agent's, so its pings go unanswered.
const (
	boxIP   = "192.0.2.1"
	agentIP = "192.0.2.2"
)

// running is a daemon run in this process, on a veth in a namespace.
type running struct {
	d      *daemon.Daemon
	state  string
	iface  string
	box    string
	peer   string // the namespace at the other end, and its interface
	peerIf string
	done   chan error
	stop   context.CancelFunc
	log    *testenv.SyncBuffer
}

// config is a file of one interface, a realm on the box and one agent
// pinged every second with a short T1: its silence counts in 3.2 s.
func config(iface, extra string) string {
	return "ports: {l2tp: [1701], sip: [5060]}\n" +
		"interfaces: [{name: " + iface + "}]\n" +
		"cpu: {sample-interval: 200ms}\nsip-t1: 50ms\n" +
		"metrics: {listen: \"127.0.0.1:0\"}\n" +
		"realms: [{name: core, address: " + boxIP + "}]\n" +
		"session-agents:\n  - {name: peer1, hostname: " + agentIP + ", realm-id: core, ping-interval: 1s, options: [ping-failure-count=1]}\n" +
		extra
}

// until polls cond every 50 ms until it holds, or fails t after limit.
func until(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if !testenv.Poll(limit, 50*time.Millisecond, cond) {
		t.Fatalf("not within %v: %s", limit, what)
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// start runs a daemon of the file config() makes with extra, and waits
// for its API.
func start(t *testing.T, extra string, tweak ...func(*daemon.Config)) (*running, string) {
	testenv.RequireBPF(t)
	box, peer := testenv.Netns(t), testenv.Netns(t)
	iface, peerIf := testenv.Veth(t, box, peer)
	testenv.Addr(t, box, iface, boxIP+"/24")
	testenv.Addr(t, peer, peerIf, agentIP+"/24")
	state := filepath.Join("/sys/fs/bpf", testenv.Unique("xdpcac-t-"))
	dir := t.TempDir()
	file := writeFile(t, dir, "cac.yaml", config(iface, extra))
	r := &running{state: state, iface: iface, box: box, peer: peer, peerIf: peerIf, done: make(chan error, 1), log: &testenv.SyncBuffer{}}
	cfg := daemon.Config{
		File: file, StateDir: state, Netns: box, RejectsLog: filepath.Join(dir, "log", "rejects.jsonl"),
		Log: slog.New(slog.NewTextHandler(r.log, nil)),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	r.d = daemon.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- r.d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
		loader.Detach(r.attachment(), state)
		os.RemoveAll(state)
		daemon.RemoveStaleFiles(state)
		if t.Failed() {
			t.Logf("daemon log:\n%s", r.log)
		}
	})
	until(t, 20*time.Second, "the daemon's API answers", func() bool {
		select {
		case err := <-r.done:
			t.Fatalf("the daemon stopped at start: %v", err)
		default:
		}
		return api.Dial(state) != nil
	})
	return r, dir
}

// padis sends one PADI from each of n modems of the group g.
func (r *running) padis(t *testing.T, g byte, n int) {
	var frames [][]byte
	for i := range n {
		frames = append(frames, pkt.Frame(pkt.Ether{Src: [6]byte{2, 0, 0, 0, g, byte(i)}, Broadcast: true}, pkt.PPPoE{Code: pkt.PADI}))
	}
	testenv.Send(t, r.peer, r.peerIf, frames)
}

func (r *running) attachment() loader.Attachment {
	return loader.Attachment{Iface: r.iface, Netns: r.box}
}

func (r *running) status(t *testing.T) api.Status {
	t.Helper()
	c := api.Dial(r.state)
	if c == nil {
		t.Fatal("the daemon's API does not answer")
	}
	st, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDaemonLife runs one daemon through its life: an apply over the API
// put in force, a bad file refused over the API and by a reload with the
// configuration in force kept, its pins removed and made again, and a
// stop that leaves the filter attached.
func TestDaemonLife(t *testing.T) {
	r, dir := start(t, "")
	first := r.status(t)
	if !filepath.IsAbs(first.Config) || first.StateDir != r.state || first.Netns != r.box || first.PID != os.Getpid() {
		t.Errorf("status: %+v", first)
	}
	// Without a fleet block the fleet's view says so, with empty lists.
	if f, err := api.Dial(r.state).Fleet(); err != nil || f.Configured || f.MembersSeen == nil || f.Limits == nil {
		t.Errorf("fleet without one: %+v, %v", f, err)
	}

	second := writeFile(t, dir, "second.yaml", config(r.iface, "classes: {pppoe-padi: {cps: 50, burst: 50}}\n"))
	if err := api.Dial(r.state).Apply(second, false); err != nil {
		t.Fatalf("apply over the API: %v", err)
	}
	if st := r.status(t); st.Config != second || st.ReloadConfig != first.Config || !st.LoadedAt.After(first.LoadedAt) || st.LastError != "" {
		t.Errorf("after the apply: %+v", st)
	}
	if m := scrapeDaemon(t, r); !strings.Contains(m, "\nxdpcac_config_last_reload_successful 1\n") {
		t.Errorf("after the apply, metrics:\n%s", m)
	}
	// A reload reads the file the daemon was started with, not the one
	// applied last...
	r.d.Reload()
	until(t, 10*time.Second, "the reload of the first file", func() bool { return r.status(t).Config == first.Config })
	// ... unless the apply adopted it.
	if err := api.Dial(r.state).Apply(second, true); err != nil {
		t.Fatalf("apply --adopt over the API: %v", err)
	}
	if st := r.status(t); st.Config != second || st.ReloadConfig != second {
		t.Errorf("after the adopting apply: %+v", st)
	}

	bad := writeFile(t, dir, "bad.yaml", config(r.iface, "classes: {pppoe-padi: {cps: fast}}\n"))
	err := api.Dial(r.state).Apply(bad, false)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Fatalf("a bad file over the API: %v, want a refusal naming it", err)
	}
	kept := r.status(t)
	if kept.Config != second || !strings.Contains(kept.LastError, "bad.yaml") {
		t.Errorf("after a refused apply: %+v, want %s kept and the refusal", kept, second)
	}
	// The refusal is a metric to alert on; the time stays the kept file's.
	m := scrapeDaemon(t, r)
	loaded := fmt.Sprintf("\nxdpcac_config_last_reload_success_timestamp_seconds %g\n", float64(kept.LoadedAt.UnixNano())/1e9)
	if !strings.Contains(m, "\nxdpcac_config_last_reload_successful 0\n") || !strings.Contains(m, loaded) {
		t.Errorf("after a refused apply, want successful 0 and%s metrics:\n%s", loaded, m)
	}

	// A reload of the file in force, now bad, is refused the same way.
	writeFile(t, dir, "second.yaml", "classes: [\n")
	r.d.Reload()
	until(t, 10*time.Second, "the reload refused", func() bool {
		return strings.Contains(r.status(t).LastError, "second.yaml")
	})
	if st := r.status(t); st.Config != second || !st.LoadedAt.Equal(kept.LoadedAt) {
		t.Errorf("after a refused reload: %+v, want the configuration of %v kept", st, kept.LoadedAt)
	}
	// Mended, the file reloads and the metric says so.
	writeFile(t, dir, "second.yaml", config(r.iface, "classes: {pppoe-padi: {cps: 40}}\n"))
	r.d.Reload()
	until(t, 10*time.Second, "the mended reload", func() bool { return r.status(t).LoadedAt.After(kept.LoadedAt) })
	if m := scrapeDaemon(t, r); !strings.Contains(m, "\nxdpcac_config_last_reload_successful 1\n") {
		t.Errorf("after the mended reload, metrics:\n%s", m)
	}

	// The pins go (bpffs directory removed): the daemon, which holds the
	// link, pins the filter again.
	if err := os.RemoveAll(r.state); err != nil {
		t.Fatal(err)
	}
	until(t, 10*time.Second, "the pins made again", func() bool {
		return loader.IsAttached(r.state, r.attachment())
	})

	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop within 10s")
	}
	r.done <- nil // for the cleanup
	if !loader.IsAttached(r.state, r.attachment()) {
		t.Error("a stop without --detach-on-exit took the filter off")
	}
	if api.Dial(r.state) != nil {
		t.Error("the API still answers after the stop")
	}
}

// TestDaemonMetricsAgents scrapes a running daemon whose session agent
// does not answer: the metric of its target says it is out of service,
// from the daemon's own state.
func TestDaemonMetricsAgents(t *testing.T) {
	r, _ := start(t, "")
	if r.status(t).Metrics == "" {
		t.Fatal("the status names no metrics address")
	}
	want := `xdpcac_session_agent_up{agent="peer1",destination="` + agentIP + `:5060",realm="core"} 0`
	var body string
	until(t, 15*time.Second, "the agent out of service in a scrape", func() bool {
		body = scrapeDaemon(t, r)
		return strings.Contains(body, want)
	})
	if !strings.Contains(body, "xdpcac_session_agent_up") {
		t.Errorf("no agent series in the scrape:\n%s", body)
	}
	if strings.Contains(body, "xdpcac_fleet_") {
		t.Errorf("fleet series without a fleet:\n%s", body)
	}
}

// scrapeDaemon returns one scrape of r's /metrics.
func scrapeDaemon(t *testing.T, r *running) string {
	t.Helper()
	resp, err := http.Get("http://" + r.status(t).Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDaemonRefusesSecond: a second daemon of the same state directory
// changes nothing and says who holds it.
func TestDaemonRefusesSecond(t *testing.T) {
	r, dir := start(t, "")
	before := r.status(t)
	err := daemon.New(daemon.Config{File: writeFile(t, dir, "other.yaml", config(r.iface, "")), StateDir: r.state, Netns: r.box}).
		Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second daemon: %v, want a refusal", err)
	}
	if st := r.status(t); st.Config != before.Config || !st.LoadedAt.Equal(before.LoadedAt) {
		t.Errorf("the second daemon changed the first: %+v", st)
	}
}

// TestDaemonMetricsMove: an apply with another metrics address serves
// there and closes the old one; one that cannot be listened on keeps the
// old and says so.
func TestDaemonMetricsMove(t *testing.T) {
	r, dir := start(t, "")
	old := r.status(t).Metrics
	moved := writeFile(t, dir, "moved.yaml", strings.Replace(config(r.iface, ""), `"127.0.0.1:0"`, `"localhost:0"`, 1))
	if err := api.Dial(r.state).Apply(moved, false); err != nil {
		t.Fatalf("apply with another metrics address: %v", err)
	}
	now := r.status(t).Metrics
	if now == "" || now == old {
		t.Fatalf("metrics on %q after the apply, were on %q", now, old)
	}
	if resp, err := http.Get("http://" + now + "/metrics"); err != nil {
		t.Errorf("the new address: %v", err)
	} else {
		resp.Body.Close()
	}
	if resp, err := http.Get("http://" + old + "/metrics"); err == nil {
		resp.Body.Close()
		t.Errorf("the old address %s still serves", old)
	}
	// The port the metrics hold, named otherwise: taken once the old
	// address lets it go.
	_, port, _ := net.SplitHostPort(now)
	same := writeFile(t, dir, "same.yaml", strings.Replace(config(r.iface, ""), `"127.0.0.1:0"`, `"localhost:`+port+`"`, 1))
	if err := api.Dial(r.state).Apply(same, false); err != nil {
		t.Fatalf("apply with the same port under another name: %v", err)
	}
	if st := r.status(t); st.Metrics != now {
		t.Errorf("metrics on %q after the same port under another name, want %s", st.Metrics, now)
	}
	// Another's port: the apply is in force, but its address is not, and
	// says so; the metrics stay.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	taken := writeFile(t, dir, "taken.yaml", strings.Replace(config(r.iface, ""), `"127.0.0.1:0"`, `"`+other.Addr().String()+`"`, 1))
	err = api.Dial(r.state).Apply(taken, false)
	if err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Fatalf("apply with a metrics address in use: %v, want it said", err)
	}
	if st := r.status(t); st.Metrics != now || st.Config != taken {
		t.Errorf("after it: %+v, want %s in force with metrics on %s", st, taken, now)
	}
}

// TestRotateFiles: each rotation shifts the files by one and keeps no
// more than asked.
func TestRotateFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rejects.jsonl")
	for i := range 4 {
		writeFile(t, dir, "rejects.jsonl", strings.Repeat("x", i+1))
		if err := daemon.RotateFiles(path, 2); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"rejects.jsonl.1": "xxxx", "rejects.jsonl.2": "xxx"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if left, _ := filepath.Glob(path + "*"); len(left) != 2 {
		t.Errorf("files left: %v, want two", left)
	}
}

// notes records what the daemon told its service manager.
type notes struct {
	mu   sync.Mutex
	sent []string
}

func (n *notes) notify(state string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, state)
}

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.sent...)
}

func (n *notes) has(prefix string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.sent {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestDaemonServiceManager: the daemon says it is ready, reloading and
// stopping, pings the watchdog while its loop writes, and rotates the
// rejects log when it is full.
func TestDaemonServiceManager(t *testing.T) {
	var n notes
	r, dir := start(t, "classes: {pppoe-padi: {cps: 1, burst: 1}}\n", func(c *daemon.Config) {
		c.Notify, c.Watchdog = n.notify, 400*time.Millisecond
		c.Rotation = daemon.Rotation{MaxBytes: 200, Keep: 2}
	})
	if !n.has("READY=1") {
		t.Errorf("no READY=1 once the API answers: %q", n.all())
	}
	until(t, 5*time.Second, "a watchdog ping", func() bool { return n.has("WATCHDOG=1") })
	r.d.Reload()
	until(t, 5*time.Second, "RELOADING=1", func() bool { return n.has("RELOADING=1\nMONOTONIC_USEC=") })

	// Rejected PADIs from many modems: a record each, a line each in the
	// log, which rotates every 200 bytes.
	r.padis(t, 0, 10)
	log := filepath.Join(dir, "log", "rejects.jsonl")
	until(t, 10*time.Second, "the rejects log rotated", func() bool {
		_, err := os.Stat(log + ".1")
		return err == nil
	})
	if _, err := os.Stat(log + ".3"); err == nil {
		t.Error("more rotated logs kept than asked")
	}

	r.stop()
	<-r.done
	r.done <- nil
	if !n.has("STOPPING=1") {
		t.Errorf("no STOPPING=1 at the stop: %q", n.all())
	}
}

// TestDaemonFollowsReattach: every interface detached and attached again
// while the daemon runs makes new maps; the daemon's heartbeat and its
// journal follow them, rather than the maps no program uses any more.
func TestDaemonFollowsReattach(t *testing.T) {
	r, dir := start(t, "classes: {pppoe-padi: {cps: 1, burst: 1}}\n")
	if err := loader.Detach(r.attachment(), r.state); err != nil {
		t.Fatal(err)
	}
	_, opts, err := daemon.LoadOptions(filepath.Join(dir, "cac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts.StateDir = r.state
	if _, err := loader.Attach(r.attachment(), opts); err != nil {
		t.Fatal(err)
	}
	// The new attachment's heartbeat: written by the daemon, fresh.
	until(t, 10*time.Second, "a heartbeat in the new maps", func() bool {
		st, err := loader.ReadCallAdmission(r.state)
		if err != nil {
			return false
		}
		in := st.Inputs
		return in.HeartbeatNS != 0 && api.MonotonicNow()-in.HeartbeatNS < uint64(time.Second)
	})
	// Rejects of the new table reach the rejects log.
	r.padis(t, 1, 5)
	log := filepath.Join(dir, "log", "rejects.jsonl")
	until(t, 10*time.Second, "the new table's records in the rejects log", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), `"class":"pppoe-padi"`)
	})
}
