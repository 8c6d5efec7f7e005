package daemon

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/internal/dashboard"
	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// prometheusBin is Debian's prometheus, unpacked beside the promtool
// `make test` names in XDPCAC_PROMTOOL.
func prometheusBin(t *testing.T) string {
	tool := os.Getenv("XDPCAC_PROMTOOL")
	if tool == "" {
		if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
			t.Fatal("XDPCAC_REQUIRE_BPF=1 but XDPCAC_PROMTOOL is unset: make test unpacks Prometheus")
		}
		t.Skip("XDPCAC_PROMTOOL is unset: make test unpacks Debian's prometheus and names its promtool")
	}
	bin := filepath.Join(filepath.Dir(tool), "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no prometheus beside %s: %v", tool, err)
	}
	return bin
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// query asks Prometheus an instant query and returns how many series
// answer it.
func query(promAddr, expr string) (int, error) {
	resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct{ Result []json.RawMessage }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s", r.Error)
	}
	return len(r.Data.Result), nil
}

// TestPrometheusDashboard: Debian's Prometheus scrapes a daemon under
// traffic (rejected PADIs, agents, accounts, capacities, charges), and every
// expression of the Grafana dashboard finds data: no panel of it is empty.
func TestPrometheusDashboard(t *testing.T) {
	bin := prometheusBin(t)
	tb := harness.SipTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+
		"cpu: {sample-interval: 200ms}\nsip-t1: 50ms\nmetrics: {listen: \"127.0.0.1:0\"}\n"+
		"classes:\n  pppoe-padi: {cps: 5, burst: 5, per-source: {key: mac, cps: 1, burst: 2}}\n  sip-invite: {cps: 50}\n"+
		"environment: {cps: 500}\n"+
		"customers:\n  - {name: acme, cps: 20, max-sessions: 20, accounts: [{name: pbx, source: "+harness.StrangerIP+"/32, cps: 10, max-sessions: 10}]}\n"+
		"call-admission: |\n  call admission limit 100\n  call admission pppoe 1 1\n"+
		"realms: [{name: core, address: "+harness.BoxIP+"}]\n"+
		"session-agents:\n  - {name: peer1, hostname: "+harness.AgentIP+", realm-id: core, ping-interval: 1s, max-sessions: 5}\n")
	tb.StartDaemon(t, cfg)
	st, err := api.Dial(tb.State).Status()
	if err != nil || st.Metrics == "" {
		t.Fatalf("the daemon's metrics address: %q %v", st.Metrics, err)
	}

	dir := t.TempDir()
	promCfg := filepath.Join(dir, "prometheus.yml")
	body := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"+
		"scrape_configs:\n  - job_name: xdpcac\n    static_configs: [{targets: [%q]}]\n", st.Metrics)
	if err := os.WriteFile(promCfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freePort(t)
	prom := testenv.Start(t, exec.Command(bin, "--config.file="+promCfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn"), 2*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus:\n%s", prom.Log.String())
		}
	})

	// Traffic for a while: PADIs from many modems, most rejected.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			var frames [][]byte
			for m := range 20 {
				frames = append(frames, pkt.Frame(pkt.Ether{Src: [6]byte{2, 0, 0, 0, byte(i), byte(m)}, Broadcast: true}, pkt.PPPoE{Code: pkt.PADI}))
			}
			testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()
	if !testenv.Poll(30*time.Second, 500*time.Millisecond, func() bool {
		n, err := query(promAddr, `up{job="xdpcac"} == 1`)
		return err == nil && n == 1
	}) {
		t.Fatal("Prometheus never scraped the daemon")
	}

	exprs, err := dashboard.Exprs("../../deploy/grafana-dashboard.json")
	if err != nil || len(exprs) < 10 {
		t.Fatalf("the dashboard's expressions: %d, %v", len(exprs), err)
	}
	// A rate wants two scrapes or more: each expression is asked until it
	// finds data, for a minute at most, and what it answered last counts.
	type answer struct {
		n   int
		err error
	}
	answers := map[string]answer{}
	testenv.Poll(time.Minute, time.Second, func() bool {
		all := true
		for where, expr := range exprs {
			if a := answers[where]; a.err == nil && a.n > 0 {
				continue
			}
			n, err := query(promAddr, dashboard.Expand(expr, "30s", "1m"))
			answers[where] = answer{n, err}
			all = all && err == nil && n > 0
		}
		return all
	})
	for where, expr := range exprs {
		q := dashboard.Expand(expr, "30s", "1m")
		switch a := answers[where]; {
		case a.err != nil:
			t.Errorf("%s: %v\n%s", where, a.err, q)
		case a.n == 0:
			t.Errorf("%s finds no data:\n%s", where, q)
		}
	}
	if t.Failed() {
		t.Logf("a scrape now:\n%s", strings.Join(strings.Split(tb.Metrics(t), "\n")[:40], "\n"))
	}
}
