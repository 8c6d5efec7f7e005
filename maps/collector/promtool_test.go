package collector

import (
	"os"
	"testing"
)

// promtool is the promtool that make test unpacks and names in
// XDPCAC_PROMTOOL. Without it the test is skipped, unless
// XDPCAC_REQUIRE_BPF=1 says that everything must run; a path that is not
// there fails either way.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("XDPCAC_PROMTOOL")
	if p == "" {
		if os.Getenv("XDPCAC_REQUIRE_BPF") == "1" {
			t.Fatal("XDPCAC_REQUIRE_BPF=1 but XDPCAC_PROMTOOL is unset: run make test, or point it at promtool")
		}
		t.Skip("XDPCAC_PROMTOOL unset: make test unpacks promtool and sets it")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("XDPCAC_PROMTOOL: %v", err)
	}
	return p
}
