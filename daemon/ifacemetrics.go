package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdpcac/xdpcac/loader"
)

// interfaceCollector exports, for every interface the file in force
// names, whether the filter is on it (docs/metrics.md, "The daemon's
// own"): 0 for one missing, gone, or whose filter a dispatcher lost, so
// that an alert fires for one interface of many, not only when none is
// attached.
type interfaceCollector struct {
	d    *Daemon
	desc *prometheus.Desc
}

func newInterfaceCollector(d *Daemon) *interfaceCollector {
	return &interfaceCollector{d: d, desc: prometheus.NewDesc("xdpcac_interface_attached",
		"1 when the filter is on an interface the configuration in force names, 0 when the interface is missing or gone.",
		[]string{"interface"}, nil)}
}

// Describe sends the one descriptor.
func (c *interfaceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect asks the pins and the kernel afresh for each interface: a few
// netlink requests, no program loaded.
func (c *interfaceCollector) Collect(ch chan<- prometheus.Metric) {
	c.d.mu.Lock()
	names := append([]string(nil), c.d.status.Interfaces...)
	c.d.mu.Unlock()
	for _, key := range names {
		a := loader.AttachmentOfKey(key, c.d.cfg.Netns)
		on := 0.0
		if !loader.NeedsAttach(c.d.cfg.StateDir, a) {
			on = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, on, key)
	}
}
