package e2e

import (
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// walk is the maps of each attachment one walk of pins gave.
func walk(t *testing.T, pins loader.Pins) map[string]*loader.Pinned {
	t.Helper()
	out := map[string]*loader.Pinned{}
	if err := pins.Each(func(p *loader.Pinned) error {
		out[p.Key()] = p
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPinCache: the daemon's scrapes hold each attachment's maps open
// from one to the next, and open them again only once a pin in its
// directory is added or replaced (here clear counters, which pins its
// base), or it is gone.
func TestPinCache(t *testing.T) {
	tb := harness.NewTestbed(t)
	a := loader.Attachment{Iface: tb.BoxIface, Netns: tb.Box}
	if _, err := loader.Attach(a, loader.Options{StateDir: tb.State}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loader.Detach(a, tb.State) })
	cache := loader.NewPinCache(tb.State)
	defer cache.Close()

	first := walk(t, cache)
	if len(first) != 1 || first[a.Key()] == nil {
		t.Fatalf("first walk: %v, want %s", first, a.Key())
	}
	if again := walk(t, cache); again[a.Key()] != first[a.Key()] {
		t.Error("the second walk opened the maps again, though nothing changed")
	}
	if err := loader.ClearCounters(tb.State, first[a.Key()], time.Now()); err != nil {
		t.Fatal(err)
	}
	changed := walk(t, cache)
	if changed[a.Key()] == first[a.Key()] {
		t.Fatal("a pin added to the attachment's directory: the walk kept the maps opened before it")
	}
	if _, err := changed[a.Key()].Stats.Info(); err != nil {
		t.Errorf("the maps opened again: %v", err)
	}
	if err := loader.Detach(a, tb.State); err != nil {
		t.Fatal(err)
	}
	if gone := walk(t, cache); len(gone) != 0 {
		t.Errorf("after the detach the walk gave %v", gone)
	}
	cache.Close()
	if err := cache.Each(func(*loader.Pinned) error { return nil }); err == nil {
		t.Error("a walk after Close opened the pins again")
	}
}
