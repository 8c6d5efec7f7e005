package cac

import (
	"strings"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	for _, cl := range Classes() {
		if got, err := ParseClass(cl.String()); err != nil || got != cl {
			t.Errorf("ParseClass(%q) = %v, %v", cl, got, err)
		}
	}
	for _, r := range Reasons() {
		if got, err := ParseReason(r.String()); err != nil || got != r {
			t.Errorf("ParseReason(%q) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseClass("pppoa"); err == nil || !strings.Contains(err.Error(), "sip-invite") {
		t.Errorf("ParseClass(pppoa) error should list the classes, got %v", err)
	}
}
