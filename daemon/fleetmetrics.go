package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/fleet"
)

// fleetCollector exports the fleet's state and this box's leases
// (docs/metrics.md, "Fleet"). It reads the keeper on every scrape and
// never asks Redis: a scrape must not wait on it. Without a fleet in
// force it emits nothing.
type fleetCollector struct {
	snapshot func(now time.Time) api.Fleet // fleetRunner.snapshot

	state, members, rtt, renewals        *prometheus.Desc
	tokens, granted, spent, expired, ret *prometheus.Desc
	grantedLocal, failovers              *prometheus.Desc
}

func newFleetCollector(snapshot func(now time.Time) api.Fleet) *fleetCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &fleetCollector{
		snapshot: snapshot,
		state: d("xdpcac_fleet_state",
			"1 for the state the fleet's leases are in (fleet, unreachable, lost), 0 for the others.", "state"),
		members: d("xdpcac_fleet_members",
			"Boxes the last grant counted in the fleet, this one included."),
		rtt: d("xdpcac_fleet_renew_rtt_seconds",
			"Round trip of the last renewal Redis answered."),
		renewals: d("xdpcac_fleet_renewals_total",
			"Requests to Redis for a lease, by how they ended: answered, or failed (unreachable, timed out, refused).", "result"),
		failovers: d("xdpcac_fleet_failovers_total",
			"Times the master the Sentinels name changed while this daemon watched them; 0 without Sentinels."),
		grantedLocal: d("xdpcac_fleet_tokens_granted_local_total",
			"Tokens this box granted its lease of a limit itself while the fleet was lost (on-fleet-lost local or static); part of xdpcac_fleet_tokens_granted_total.", "limit"),
		tokens: d("xdpcac_fleet_lease_tokens",
			"Tokens this box's lease of a fleet-scope limit holds now.", "limit"),
		granted: d("xdpcac_fleet_tokens_granted_total",
			"Tokens the fleet granted this box's lease of a limit.", "limit"),
		spent: d("xdpcac_fleet_tokens_spent_total",
			"Tokens of this box's lease of a limit that admitted calls spent.", "limit"),
		expired: d("xdpcac_fleet_tokens_expired_total",
			"Tokens of this box's lease of a limit taken back unspent after their lifetime.", "limit"),
		ret: d("xdpcac_fleet_tokens_returned_total",
			"Expired tokens of this box's lease of a limit given back to the fleet.", "limit"),
	}
}

// Describe sends every descriptor the collector may emit.
func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.members, c.rtt, c.renewals, c.tokens, c.granted, c.grantedLocal, c.spent, c.expired, c.ret, c.failovers} {
		ch <- d
	}
}

// Collect emits the fleet's series, none without a fleet.
func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	v := c.snapshot(time.Now())
	if !v.Configured {
		return
	}
	for _, s := range []fleet.State{fleet.StateFleet, fleet.StateUnreachable, fleet.StateLost} {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, boolGauge(v.State == string(s)), string(s))
	}
	ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(v.Members))
	ch <- prometheus.MustNewConstMetric(c.rtt, prometheus.GaugeValue, float64(v.RedisRTTUS)/1e6)
	ch <- prometheus.MustNewConstMetric(c.renewals, prometheus.CounterValue, float64(v.RenewalsAnswered), "answered")
	ch <- prometheus.MustNewConstMetric(c.renewals, prometheus.CounterValue, float64(v.RenewalsFailed), "failed")
	ch <- prometheus.MustNewConstMetric(c.failovers, prometheus.CounterValue, float64(v.Failovers))
	for _, l := range v.Limits {
		ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.GaugeValue, float64(l.Tokens), l.Name)
		ch <- prometheus.MustNewConstMetric(c.granted, prometheus.CounterValue, float64(l.Granted), l.Name)
		ch <- prometheus.MustNewConstMetric(c.grantedLocal, prometheus.CounterValue, float64(l.GrantedLocal), l.Name)
		ch <- prometheus.MustNewConstMetric(c.spent, prometheus.CounterValue, float64(max(0, l.Spent)), l.Name)
		ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(l.Expired), l.Name)
		ch <- prometheus.MustNewConstMetric(c.ret, prometheus.CounterValue, float64(l.Returned), l.Name)
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
