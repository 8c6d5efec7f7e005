package collector

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardMetrics: the Grafana dashboard under deploy/ is JSON and
// asks only for metrics the collector exports, so a renamed metric cannot
// leave it with empty panels.
func TestDashboardMetrics(t *testing.T) {
	data, err := os.ReadFile("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatal("deploy/grafana-dashboard.json is not valid JSON")
	}
	described := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() { New(fakeReader(), "test").Describe(ch); close(ch) }()
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range ch {
		if m := name.FindStringSubmatch(d.String()); m != nil {
			described[m[1]] = true
		}
	}
	used := regexp.MustCompile(`xdpcac_[a-z_]+`).FindAllString(string(data), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard uses no xdpcac metric")
	}
	for _, m := range used {
		if !described[m] {
			t.Errorf("the dashboard uses %s, which the collector does not export (it exports %v)", m, described)
		}
	}
}
