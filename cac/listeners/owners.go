package listeners

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Owner is a process that holds a socket.
type Owner struct {
	PID     int
	Process string // its comm
}

// Owners finds a process holding each socket of inodes, looking at the
// descriptors under proc (/proc): socket inodes are unique across
// network namespaces, so one walk serves any namespace. It is best
// effort: a process gone meanwhile, or one whose descriptors this process
// may not read (another user's, without CAP_SYS_PTRACE), owns nothing
// here, and a socket without an owner found is simply not in the map.
// The walk reads every descriptor of every process, so it is made only
// to name listeners, never on a timer.
func Owners(proc string, inodes []uint32) map[uint32]Owner {
	want := map[string]uint32{}
	for _, ino := range inodes {
		want[fmt.Sprintf("socket:[%d]", ino)] = ino
	}
	out := map[uint32]Owner{}
	if len(want) == 0 {
		return out
	}
	pids, err := os.ReadDir(proc)
	if err != nil {
		return out
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(proc, p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			ino, ok := want[target]
			if !ok {
				continue
			}
			if _, done := out[ino]; !done {
				out[ino] = Owner{PID: pid, Process: comm(proc, p.Name())}
			}
		}
		if len(out) == len(want) {
			break
		}
	}
	return out
}

// comm is the command name of a process, "" when it cannot be read.
func comm(proc, pid string) string {
	b, err := os.ReadFile(filepath.Join(proc, pid, "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
