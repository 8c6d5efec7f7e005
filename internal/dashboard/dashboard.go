package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Exprs are the PromQL expressions of the dashboard's panels and
// variables, by where they stand.
func Exprs(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Query any
			}
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	// label_values(SELECTOR, LABEL) is Grafana's, not PromQL: its selector is.
	lv := regexp.MustCompile(`^label_values\((.*), *[a-z_]+\)$`)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if m := lv.FindStringSubmatch(fmt.Sprint(q["query"])); m != nil {
				out["variable "+v.Name] = m[1]
			}
		}
	}
	return out, nil
}

// Expand replaces Grafana's variables with what a query of every
// instance and interface over the given range would use.
func Expand(expr, rateInterval, rangeDur string) string {
	return strings.NewReplacer("$__rate_interval", rateInterval, "$__range", rangeDur, "$instance", ".*", "$iface", ".*").Replace(expr)
}
