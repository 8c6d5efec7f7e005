package fleet_test

import (
	"os"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestMain builds cacctl for the tests that run boxes.
func TestMain(m *testing.M) {
	os.Exit(harness.RunTests(m))
}
