package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/api"
)

// TestClearDeniedArgs: clear denied refuses what is no address, prefix,
// MAC or all, saying what it expected, before it opens anything.
func TestClearDeniedArgs(t *testing.T) {
	for _, args := range [][]string{{"clear", "denied"}, {"clear", "denied", "nonsense"}, {"clear", "denied", "203.0.113.1", "all"}} {
		_, err := run(append(args, "--state-dir", t.TempDir())...)
		if err == nil || !strings.Contains(err.Error(), "all") {
			t.Errorf("%v: %v, want an error naming what is expected", args, err)
		}
	}
}

// TestDeniedText: show denied's table, one line a source, and what it
// says of an empty table.
func TestDeniedText(t *testing.T) {
	var b bytes.Buffer
	if err := writeDeniedText(&b, nil); err != nil || b.String() != "no denied sources\n" {
		t.Errorf("empty: %q, %v", b.String(), err)
	}
	b.Reset()
	at := time.Date(2026, 12, 5, 18, 0, 0, 0, time.UTC)
	ds := []api.DeniedSource{{Source: "203.0.113.7", How: api.DeniedAuto, Since: at, Until: at.Add(time.Minute), Refusals: 10, Frames: 1234}}
	if err := writeDeniedText(&b, ds); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "SOURCE") ||
		strings.Join(strings.Fields(lines[1]), " ") != "203.0.113.7 auto 2026-12-05 18:00:00.000 2026-12-05 18:01:00.000 10 1234" {
		t.Errorf("table:\n%s", b.String())
	}
}
