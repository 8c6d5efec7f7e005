package daemon

import (
	"testing"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/loader"
)

// TestDefaultStateDir: the contract names the loader's default state
// directory, which it may not import.
func TestDefaultStateDir(t *testing.T) {
	if api.DefaultStateDir != loader.DefaultStateDir {
		t.Errorf("api.DefaultStateDir %q, loader.DefaultStateDir %q", api.DefaultStateDir, loader.DefaultStateDir)
	}
}
