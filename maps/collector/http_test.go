package collector

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestHTTP(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(fakeReader(), "v1.2.3"))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", resp.Status, body)
	}
	for _, line := range []string{
		`xdpcac_packets_total{class="pppoe-padi",iface="eth1",verdict="pass"} 5`,
		`xdpcac_packets_total{class="sip-invite",iface="blue:eth2",verdict="drop"} 6`,
		`xdpcac_rejects_total{class="pppoe-padi",iface="eth1",reason="class"} 2`,
		`xdpcac_call_admission_charges{kind="total"} 350`,
		`xdpcac_cpu_ratio 0.425`,
		`xdpcac_collect_errors_total 0`,
	} {
		if !strings.Contains(string(body), "\n"+line+"\n") {
			t.Errorf("body lacks %q", line)
		}
	}

	promtool := os.Getenv("XDPCAC_PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		t.Log("no promtool (XDPCAC_PROMTOOL, PATH): `promtool check metrics` not run")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
