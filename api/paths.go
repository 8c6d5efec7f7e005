package api

import (
	"fmt"
	"path/filepath"
	"strings"
)

// RunDir holds a directory of each daemon, named after its state
// directory; a unit's RuntimeDirectory=xdpcac creates it. The daemon
// makes it 0711: anyone may pass through to a directory whose name they
// know, no one but root may list it, and each daemon's own directory
// says who may go further.
const RunDir = "/run/xdpcac"

// DefaultStateDir is where attachments keep their pins unless told
// otherwise: loader.DefaultStateDir, which a test of package daemon holds
// equal to it.
const DefaultStateDir = "/sys/fs/bpf/xdpcac"

// Paths are the files of the daemon of one state directory, all in its
// own directory in RunDir.
type Paths struct {
	// Dir is the daemon's own directory, /run/xdpcac/NAME, NAME being the
	// state directory's absolute path as `systemd-escape --path` writes
	// it: sys-fs-bpf-xdpcac for the default. Only this daemon sets its
	// mode: 0700, or root:GROUP 0710 with api.read-group.
	Dir string
	// Lock is held by `cacctl run` for as long as it runs, and holds its
	// pid.
	Lock string
	// Socket serves the API: root's (0600), or root:GROUP 0660 with
	// api.read-group.
	Socket string
	// Agents keeps the session agents' statuses across restarts.
	Agents string
	// Fleet keeps the number of boxes the fleet last counted across
	// restarts, for on-fleet-lost local before Redis answers.
	Fleet string
}

// PathsOf names the files of the daemon of stateDir. Two paths of one
// directory (a trailing slash, a relative path) name the same files, and
// two directories never do: the escaping is systemd's, which is
// one-to-one, so that daemons of different state directories coexist.
func PathsOf(stateDir string) Paths {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	dir := filepath.Join(RunDir, escapePath(filepath.Clean(stateDir)))
	return Paths{
		Dir:    dir,
		Lock:   filepath.Join(dir, "lock"),
		Socket: filepath.Join(dir, "api.sock"),
		Agents: filepath.Join(dir, "agents.json"),
		Fleet:  filepath.Join(dir, "fleet.json"),
	}
}

// escapePath is `systemd-escape --path` of a clean path: without its
// leading and trailing slashes, "/" turned into "-", and every byte but
// letters, digits, ":", "_" and a "." that does not lead written \xNN,
// "-" and "\" among them, so that no two paths give one name. The root
// is "-".
func escapePath(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			b.WriteByte('-')
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == ':', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}
