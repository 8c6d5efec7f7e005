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

// TestDeniedSources: the deny table, one for the box, is exported once
// whatever the interfaces, with the daemon's count of its evictions;
// without them, not at all.
func TestDeniedSources(t *testing.T) {
	evicted := uint64(934464)
	snap := Snapshot{
		Interfaces:  map[string]maps.Stats{"eth0": {}, "eth1": {}},
		DenyTable:   &DenyTable{Sources: 7, Size: 65536},
		DenyEvicted: &evicted,
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(ReaderFunc(func() (Snapshot, error) { return snap, nil }), "test"))
	got := scrape(t, reg)
	for key, want := range map[string]float64{`xdpcac_denied_sources`: 7, `xdpcac_denied_table_size`: 65536, `xdpcac_denied_evicted_total`: 934464} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", key, v, ok, want)
		}
	}
	snap.DenyTable, snap.DenyEvicted = nil, nil
	got = scrape(t, reg)
	for _, key := range []string{`xdpcac_denied_sources`, `xdpcac_denied_table_size`, `xdpcac_denied_evicted_total`} {
		if v, ok := got[key]; ok {
			t.Errorf("no deny table, yet %s = %v", key, v)
		}
	}
}
