package collector

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	alertRules     = "../../deploy/xdpcac-alerts.yml"
	alertRulesTest = "../../deploy/xdpcac-alerts_test.yml"
)

// TestAlertRulesMetrics: the alert rules ask only for metrics the
// collector exports, by labels they have, and every alert has a unit test
// where it fires and one where it stays quiet. It needs no promtool.
func TestAlertRulesMetrics(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	for file, v := range map[string]any{alertRules: &rules, alertRulesTest: &tests} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
			quiet[a.Alertname] = quiet[a.Alertname] || len(a.ExpAlerts) == 0
		}
	}
	metrics := exported(t)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("alert %s: a test where it fires %v, where it does not %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
			if strings.HasPrefix(r.Expr, "up{") {
				continue // the scrape's own
			}
			checkSelectors(t, metrics, "alert "+r.Alert, r.Expr)
		}
	}
	if n == 0 {
		t.Fatal("no alert rules")
	}
}

// TestAlertRules: promtool accepts the rule file and passes its unit
// tests.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", alertRulesTest}} {
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s: %s", strings.Join(args, " "), out)
		}
	}
}
