package cac

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNamesMatchC holds the Go numbering to the enums of bpf/cac.h, which
// bpf2go cannot export because no map or program type refers to them.
func TestNamesMatchC(t *testing.T) {
	src, err := os.ReadFile("../bpf/cac.h")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*(CAC_[A-Z0-9_]+)\s*=\s*(\d+),`)
	c := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.Atoi(m[2])
		c[m[1]] = n
	}
	enum := func(prefix, name string) string {
		return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	}
	for _, cl := range Classes() {
		if got, ok := c[enum("CAC_CLASS_", cl.String())]; !ok || got != int(cl) {
			t.Errorf("class %s is %d in Go, %d (found %v) in C", cl, cl, got, ok)
		}
	}
	for _, r := range Reasons() {
		if got, ok := c[enum("CAC_REASON_", r.String())]; !ok || got != int(r) {
			t.Errorf("reason %s is %d in Go, %d (found %v) in C", r, r, got, ok)
		}
	}
	for name, want := range map[string]int{
		"CAC_NUM_CLASSES": NumClasses, "CAC_NUM_REASONS": NumReasons,
		"CAC_KIND_UNWATCHED": int(Unwatched), "CAC_KIND_CLASS": int(Session),
		"CAC_KIND_OTHER": int(Other), "CAC_KIND_INDIALOG": int(InDialog),
		"CAC_KIND_FRAGMENT": int(Fragment), "CAC_KIND_MALFORMED": int(Malformed),
		"CAC_PORT_NONE": int(PortNone), "CAC_PORT_L2TP": int(PortL2TP), "CAC_PORT_SIP": int(PortSIP),
		"CAC_LEVEL_ENVIRONMENT": NumClasses, "CAC_NUM_LEVELS": NumClasses + 1,
		"CAC_CALL_PPPOE": int(CallPPPoE), "CAC_CALL_VPDN": int(CallVPDN), "CAC_CALL_SIP": int(CallSIP),
		"CAC_NUM_CALL_TYPES": NumCallTypes,
	} {
		if got, ok := c[name]; !ok || got != want {
			t.Errorf("%s is %d in Go, %d (found %v) in C", name, want, got, ok)
		}
	}
}

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
