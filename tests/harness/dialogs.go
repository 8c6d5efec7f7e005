package harness

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
)

// DialogKeys are the Call-ID hashes the dialog table m holds.
func DialogKeys(t testing.TB, m *ebpf.Map) []uint64 {
	t.Helper()
	var (
		keys []uint64
		k    uint32
		s    bpf.XdpCacDialogSet
	)
	it := m.Iterate()
	for it.Next(&k, &s) {
		for _, d := range s.Way {
			if d.Callid != 0 {
				keys = append(keys, d.Callid)
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("read the dialog table: %v", err)
	}
	return keys
}

// dialogSet reads the set of the dialog table m that callid belongs to.
func dialogSet(t testing.TB, m *ebpf.Map, callid uint64) (uint32, bpf.XdpCacDialogSet) {
	t.Helper()
	i := cac.DialogSet(callid, m.MaxEntries())
	var s bpf.XdpCacDialogSet
	if err := m.Lookup(i, &s); err != nil {
		t.Fatalf("read the dialog table: %v", err)
	}
	return i, s
}

// LookupDialog is the dialog of the Call-ID hash callid in the dialog
// table m, and whether it holds one.
func LookupDialog(t testing.TB, m *ebpf.Map, callid uint64) (bpf.XdpCacDialog, bool) {
	t.Helper()
	_, s := dialogSet(t, m, callid)
	for _, d := range s.Way {
		if callid != 0 && d.Callid == callid {
			return d, true
		}
	}
	return bpf.XdpCacDialog{}, false
}

// ForgetDialog removes the dialog of callid from the dialog table m.
func ForgetDialog(t testing.TB, m *ebpf.Map, callid uint64) {
	t.Helper()
	i, s := dialogSet(t, m, callid)
	for w := range s.Way {
		if callid != 0 && s.Way[w].Callid == callid {
			s.Way[w] = bpf.XdpCacDialog{}
		}
	}
	if err := m.Update(i, &s, ebpf.UpdateExist); err != nil {
		t.Fatalf("write the dialog table: %v", err)
	}
}
