package maps

import (
	"bytes"
	"fmt"

	"github.com/cilium/ebpf"
)

// RecentStamp is what bpf/recent.h writes in a slot of the recent Call-ID
// table at now (the coarse monotonic clock, ns): seven bits of the clock
// in units of 2^32 ns, and a low bit set once written.
func RecentStamp(now uint64) uint8 { return uint8((now>>32)&0x7f)<<1 | 1 }

// MarkAllRecent stamps every slot of the recent Call-ID table at now. An
// upgrade from a version without the table makes it afresh, and an empty
// slot tells the program that no INVITE of its Call-IDs was remembered:
// the copies of the INVITEs the old version admitted in its last seconds
// would be charged as new calls. Marked, every Call-ID counts as recent
// until Timer B has passed, which costs only the lookups the table saves.
func MarkAllRecent(m *ebpf.Map, now uint64) error {
	line := bytes.Repeat([]byte{RecentStamp(now)}, int(m.ValueSize()))
	for i := range m.MaxEntries() {
		if err := m.Update(i, line, ebpf.UpdateExist); err != nil {
			return fmt.Errorf("mark line %d of the recent Call-ID table: %w", i, err)
		}
	}
	return nil
}
