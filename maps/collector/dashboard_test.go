package collector

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdpcac/xdpcac/internal/dashboard"
)

// exported are the collector's metric names with their labels.
func exported(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	go func() { New(fakeReader(), "test").Describe(ch); close(ch) }()
	re := regexp.MustCompile(`fqName: "([a-z_]+)".*variableLabels: \{([a-z_,]*)\}`)
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read descriptor %s", d)
		}
		labels := map[string]bool{"instance": true, "job": true} // the scrape's
		for _, l := range strings.Split(m[2], ",") {
			labels[l] = l != "" || labels[l]
		}
		out[m[1]] = labels
	}
	return out
}

// dashboardExprs are the PromQL expressions of the dashboard's panels and
// variables, by where they stand.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	out, err := dashboard.Exprs("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	selectorRe = regexp.MustCompile(`(xdpcac_[a-z_]+)(\{[^}]*\})?`)
	matcherRe  = regexp.MustCompile(`([a-z_]+) *(=~|!~|!=|=)`)
	groupingRe = regexp.MustCompile(`\b(?:by|on|ignoring|without) *\(([^)]*)\)`)
)

// TestDashboardMetrics: the Grafana dashboard under deploy/ asks only for
// metrics the collector exports, by labels they have, groups by labels
// one of them has, and shows every metric but those said here; so a
// renamed metric or label cannot leave it with empty panels.
func TestDashboardMetrics(t *testing.T) {
	metrics := exported(t)
	exprs := dashboardExprs(t)
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no expressions")
	}
	used := map[string]bool{}
	for where, expr := range exprs {
		inExpr := checkSelectors(t, metrics, where, expr)
		for name := range inExpr {
			used[name] = true
		}
		for _, g := range groupingRe.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(g[1], ",") {
				l = strings.TrimSpace(l)
				has := false
				for name := range inExpr {
					has = has || metrics[name][l]
				}
				if l != "" && !has {
					t.Errorf("%s: groups by %s, which none of its metrics has", where, l)
				}
			}
		}
	}
	// Not on the dashboard, and why.
	elsewhere := map[string]string{
		"xdpcac_calls_total":                                  "counts only call admission's rejects, not the buckets': the calls panels count xdpcac_packets_total",
		"xdpcac_sip_indialog_verified_total":                  "part of sip-indialog's pass in \"Other frames per second\"",
		"xdpcac_sip_retransmits_total":                        "part of sip-invite's series",
		"xdpcac_config_last_reload_success_timestamp_seconds": "when the file in force was loaded, for a query beside a change record; the panel shows whether the last reload took",
	}
	var missing []string
	for name := range metrics {
		if !used[name] && elsewhere[name] == "" {
			missing = append(missing, name)
		}
		if used[name] && elsewhere[name] != "" {
			t.Errorf("%s is on the dashboard: take it out of elsewhere", name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("not on the dashboard: %v (add a panel, or say why in elsewhere)", missing)
	}
}

// checkSelectors fails t for each metric of expr that the collector does
// not export, or selects by a label it does not have, and for an expr of
// no xdpcac metric; it returns the metrics expr names.
func checkSelectors(t *testing.T, metrics map[string]map[string]bool, where, expr string) map[string]bool {
	t.Helper()
	in := map[string]bool{}
	for _, m := range selectorRe.FindAllStringSubmatch(expr, -1) {
		labels, ok := metrics[m[1]]
		if !ok {
			t.Errorf("%s: %s is no metric of the collector", where, m[1])
			continue
		}
		in[m[1]] = true
		for _, lm := range matcherRe.FindAllStringSubmatch(m[2], -1) {
			if !labels[lm[1]] {
				t.Errorf("%s: %s has no label %s", where, m[1], lm[1])
			}
		}
	}
	if len(in) == 0 {
		t.Errorf("%s: no xdpcac metric in %q", where, expr)
	}
	return in
}

// TestDashboardRejects: a panel of rejects counts every reason, so that
// it cannot read 0 while a limit it leaves out drops half the calls.
func TestDashboardRejects(t *testing.T) {
	for where, expr := range dashboardExprs(t) {
		for _, m := range selectorRe.FindAllStringSubmatch(expr, -1) {
			if m[1] == "xdpcac_calls_total" {
				t.Errorf("%s: xdpcac_calls_total counts call admission's rejects only", where)
			}
			if m[1] == "xdpcac_rejects_total" && strings.Contains(m[2], "reason") {
				t.Errorf("%s: selects some reasons of xdpcac_rejects_total: %s", where, m[0])
			}
		}
	}
}

// TestDashboardPromQL: promtool parses every expression of the dashboard,
// with Grafana's variables put in, as a recording rule.
func TestDashboardPromQL(t *testing.T) {
	tool := promtool(t)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	i := 0
	for _, expr := range dashboardExprs(t) {
		i++
		q, _ := json.Marshal(dashboard.Expand(expr, "1m", "1h")) // a JSON string is a YAML one
		fmt.Fprintf(&rules, "      - record: dashboard:expr%d\n        expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's expressions: %v\n%s\n%s", err, out, rules.String())
	}
}
