// Package collector exports the fast path's state to Prometheus.
//
// It reads on every scrape instead of keeping its own counters: the
// counters live in per-CPU BPF maps that the XDP program updates, so the
// map is the source of truth and nothing in the daemon can drift from it,
// miss an update or double count after a restart of the daemon. A scrape
// costs one read of the pinned maps; there is no background goroutine.
package collector
