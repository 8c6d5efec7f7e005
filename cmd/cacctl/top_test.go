package main

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/maps/collector"
)

// sample is a top sample at t with n PADIs admitted and 2n rejected by
// class.
func sample(t time.Time, n uint64) topSample {
	var s maps.Stats
	s.Classes[cac.PPPoEPADI].Admitted = n
	s.Classes[cac.PPPoEPADI].Rejected[cac.ReasonClass] = 2 * n
	return topSample{at: t, total: s, snap: collector.Snapshot{
		Interfaces: map[string]maps.Stats{"eth1": s},
		Buckets:    []collector.Bucket{{Level: "class", Class: "pppoe-padi", Tokens: 5, Burst: 10}},
	}}
}

// TestTopFrame: rates are the counters' difference over the time between
// samples, and the bucket is drawn half full.
func TestTopFrame(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	writeTop(&b, sample(t0, 100), sample(t0.Add(2*time.Second), 300), nil)
	out := b.String()
	for _, want := range []string{
		"pppoe-padi          300        100        200  class 400", // 600 seen in 2 s
		"pppoe-padi   ##########                5 of 10     calls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("frame lacks %q:\n%s", want, out)
		}
	}
}

// TestTopKeys: a tick reads a new sample; q quits.
func TestTopKeys(t *testing.T) {
	t0 := time.Now()
	n := uint64(0)
	m := topModel{read: func() (topSample, error) { n += 10; return sample(t0.Add(time.Duration(n)*time.Second), n), nil }}
	next, cmd := m.Update(topTick{})
	if cmd == nil || next.(topModel).last.total.Classes[cac.PPPoEPADI].Admitted != 10 {
		t.Fatalf("a tick did not read a sample: %+v", next)
	}
	if _, cmd := next.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}); cmd == nil || cmd() != tea.Quit() {
		t.Error("q does not quit")
	}
}
