package daemon

import (
	"os"
	"testing"

	"github.com/xdpcac/xdpcac/tests/harness"
)

func TestMain(m *testing.M) {
	os.Exit(harness.RunTests(m))
}
