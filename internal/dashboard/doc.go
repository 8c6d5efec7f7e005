// Package dashboard reads the PromQL of the Grafana dashboard under
// deploy/, for the tests that hold it to the collector and to a real
// Prometheus scraping a daemon.
package dashboard
