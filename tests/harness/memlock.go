package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// Memlock is the kernel's memory charge of a map, as its fdinfo says:
// what the map holds at its size, preallocated or not, with its hash
// buckets and per-CPU lists.
func Memlock(t testing.TB, m *ebpf.Map) uint64 {
	t.Helper()
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", m.FD()))
	if err != nil {
		t.Fatalf("fdinfo of map %v: %v", m, err)
	}
	for line := range strings.SplitSeq(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "memlock:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("fdinfo of map %v: memlock %q: %v", m, v, err)
			}
			return n
		}
	}
	t.Fatalf("fdinfo of map %v: no memlock", m)
	return 0
}
