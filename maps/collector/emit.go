package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// family is one metric family: its descriptor bound to its name and type,
// so a counter cannot be emitted as a gauge.
type family struct {
	name string
	typ  prometheus.ValueType
	desc *prometheus.Desc
}

func newFamily(name, help string, typ prometheus.ValueType, labels ...string) family {
	return family{name: name, typ: typ, desc: prometheus.NewDesc(name, help, labels, nil)}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// emitter sends the metrics of one scrape and gathers what went wrong.
type emitter struct {
	ch   chan<- prometheus.Metric
	errs []error
}

func (e *emitter) fail(err error) { e.errs = append(e.errs, err) }

// emit sends one metric of f, or records why it cannot (a label value that
// is not valid UTF-8) and sends nothing.
func (e *emitter) emit(f family, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(f.desc, f.typ, v, labels...)
	if err != nil {
		e.fail(fmt.Errorf("export %s%q: %w", f.name, labels, err))
		return
	}
	e.ch <- m
}
