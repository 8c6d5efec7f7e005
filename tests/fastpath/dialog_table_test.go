package fastpath

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/internal/model/classify"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestDialogSetForgetsItsOldest: a dialog table of one set holds the four
// dialogs admitted last. Six INVITEs admitted one second apart leave the
// first two forgotten, their in-dialog requests held like a stranger's,
// and the last four known; the program and the model agree on each.
func TestDialogSetForgetsItsOldest(t *testing.T) {
	f := harness.NewFastPathWith(t, false, func(s *ebpf.CollectionSpec) {
		if err := maps.SizeDialogs(s, cac.DialogWays); err != nil {
			t.Fatal(err)
		}
	})
	var ids []string
	var want []uint64
	for i := range 6 {
		f.MustAt(t, uint64(100+i)*second)
		id := fmt.Sprintf("call-%d@198.51.100.7", i)
		ids = append(ids, id)
		frame := invite(id, 1, fmt.Sprintf("z9hG4bK-%d", i))
		if err := f.Check(frame); err != nil {
			t.Fatalf("INVITE %d: %v", i, err)
		}
		if i >= 2 {
			_, msg := classify.ClassifySIP(frame, f.Model.Ports)
			want = append(want, classify.CallID(msg))
		}
	}
	got := harness.DialogKeys(t, f.Objs.Dialogs)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the set holds %x, want the last four dialogs %x", got, want)
	}
	for i, id := range ids {
		before := f.Stats(t).SIPInDialogVerified
		bye := Frame(Ether{}, IPv4{Src: strangerAddr}, UDP{Src: 5060, Dst: 5060}, SIPRequest("BYE", harness.ToTag).With("Call-ID", id))
		if err := f.Check(bye); err != nil {
			t.Fatalf("BYE of call %d: %v", i, err)
		}
		if verified := f.Stats(t).SIPInDialogVerified > before; verified != (i >= 2) {
			t.Errorf("BYE of call %d: verified %v, want %v", i, verified, i >= 2)
		}
	}
}

// TestDialogSetsSpread: Call-IDs that differ only in a counter, as many
// user agents write them, spread over the sets of the default table as
// random ones would, although FNV's low bits see only the low bytes of
// each word.
func TestDialogSetsSpread(t *testing.T) {
	const sets, calls = 16384, 16384
	used := map[uint32]bool{}
	for i := range calls {
		msg := []byte(fmt.Sprintf("INVITE sip:bob@example.com SIP/2.0\r\nCall-ID: call-%08d@pc33.example.com\r\n\r\n", i))
		used[cac.DialogSet(classify.CallID(msg), sets)] = true
	}
	// Random hashes would fill 1 - 1/e of the sets, 63 %.
	if n := len(used); n < sets*55/100 {
		t.Errorf("%d Call-IDs fill %d of %d sets, want at least 55 %%", calls, n, sets)
	}
}
