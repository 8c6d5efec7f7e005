package collector

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/xdpcac/xdpcac/maps"
)

// TestDeniedFrames: the frames of denied sources are exported per
// interface, static and auto apart, zeros included.
func TestDeniedFrames(t *testing.T) {
	snap := Snapshot{Interfaces: map[string]maps.Stats{
		"eth0": {DeniedStatic: 3, DeniedAuto: 5},
		"eth1": {},
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(ReaderFunc(func() (Snapshot, error) { return snap, nil }), "test"))
	got := scrape(t, reg)
	for key, want := range map[string]float64{
		`xdpcac_denied_frames_total{iface="eth0",reason="static"}`: 3,
		`xdpcac_denied_frames_total{iface="eth0",reason="auto"}`:   5,
		`xdpcac_denied_frames_total{iface="eth1",reason="static"}`: 0,
		`xdpcac_denied_frames_total{iface="eth1",reason="auto"}`:   0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", key, v, ok, want)
		}
	}
}

// TestDeniedSources: the sources denied now are exported per interface
// that has a deny table, an empty table as 0, none for an interface
// without one.
func TestDeniedSources(t *testing.T) {
	snap := Snapshot{
		Interfaces:    map[string]maps.Stats{"eth0": {}, "eth1": {}, "eth2": {}},
		DeniedSources: map[string]uint64{"eth0": 7, "eth1": 0},
		DeniedTable:   map[string]uint64{"eth0": 65536, "eth1": 1024},
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(ReaderFunc(func() (Snapshot, error) { return snap, nil }), "test"))
	got := scrape(t, reg)
	for key, want := range map[string]float64{
		`xdpcac_denied_sources{iface="eth0"}`:    7,
		`xdpcac_denied_sources{iface="eth1"}`:    0,
		`xdpcac_denied_table_size{iface="eth0"}`: 65536,
		`xdpcac_denied_table_size{iface="eth1"}`: 1024,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", key, v, ok, want)
		}
	}
	if v, ok := got[`xdpcac_denied_sources{iface="eth2"}`]; ok {
		t.Errorf("eth2 has no deny table, yet exported %v", v)
	}
}
