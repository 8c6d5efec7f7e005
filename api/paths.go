package api

import (
	"path/filepath"
	"strings"
)

// RunDir holds every daemon's lock and API socket; a unit's
// RuntimeDirectory=xdpcac creates it.
const RunDir = "/run/xdpcac"

// DefaultStateDir is where attachments keep their pins unless told
// otherwise: loader.DefaultStateDir, which a test of package daemon holds
// equal to it.
const DefaultStateDir = "/sys/fs/bpf/xdpcac"

// Paths are the files of the daemon of one state directory, all in RunDir.
type Paths struct {
	// Lock is held by `cacctl run` for as long as it runs, and holds its
	// pid.
	Lock string
	// Socket serves the API, to root only.
	Socket string
	// Agents keeps the session agents' statuses across restarts.
	Agents string
	// Fleet keeps the number of boxes the fleet last counted across
	// restarts, for on-fleet-lost local before Redis answers.
	Fleet string
}

// PathsOf names the files of the daemon of stateDir: api.* for the default
// state directory, a name derived from the path for others, so that
// daemons of different state directories coexist.
func PathsOf(stateDir string) Paths {
	name := "api"
	if filepath.Clean(stateDir) != DefaultStateDir {
		name = "api" + strings.ReplaceAll(filepath.Clean(stateDir), "/", "_")
	}
	base := filepath.Join(RunDir, name)
	return Paths{Lock: base + ".lock", Socket: base + ".sock", Agents: base + ".agents.json", Fleet: base + ".fleet.json"}
}
