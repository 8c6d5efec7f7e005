package fastpath

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestApplyUnderFlood: applies switch between two policies while both
// CPUs run INVITEs through the program. Either policy rejects every call,
// each with its own reason (account in one, class in the other), and any
// mix of the two (the account's limit from one and the class's from the
// other, or no account while the trie is rewritten) admits it. So every
// call must be rejected, by one of the two reasons, and never admitted.
func TestApplyUnderFlood(t *testing.T) {
	f := harness.NewFastPath(t, false)
	pm := maps.PolicyMapsOf(&f.Objs.XdpMaps)
	accounts := netip.MustParsePrefix("198.51.100.0/24")
	oneCall := harness.MustRate(t, 0.001, 1) // the clock stands still: one call, ever
	var byAccount, byClass policy.Policy
	byAccount.Customers = []bucket.Limit{bucket.Unlimited}
	byAccount.Accounts = []policy.Account{{Prefix: accounts, Limit: oneCall}}
	byClass.Customers = []bucket.Limit{bucket.Unlimited}
	byClass.Accounts = []policy.Account{{Prefix: accounts, Limit: bucket.Unlimited}}
	byClass.Levels[cac.SIPInvite] = oneCall
	// Without a Via the INVITE names no transaction: every copy of the
	// flood goes through admission, none is refused again as a
	// retransmission.
	invite := Frame(Ether{}, IPv4{Src: netip.MustParseAddr("198.51.100.20")}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).Without("Via"))

	// Use up the one call of each bucket, so that from here on both
	// policies reject everything.
	f.MustAt(t, 10*second)
	for _, p := range []policy.Policy{byAccount, byClass} {
		f.SetPolicy(t, p)
		f.Offer(t, invite, 2)
	}
	before := f.Stats(t).Classes[cac.SIPInvite]
	if before.Admitted != 2 || before.Rejected[cac.ReasonAccount] != 1 || before.Rejected[cac.ReasonClass] != 1 {
		t.Fatalf("before the flood: %+v", before)
	}

	var stop atomic.Bool
	var runs atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	const repeat = 2000 // calls per BPF_PROG_TEST_RUN
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := f.Objs.XdpCac.Run(&ebpf.RunOptions{Data: invite, Repeat: repeat}); err != nil {
					errs <- err
					return
				}
				runs.Add(repeat)
			}
		}()
	}
	// One writer: each apply waits out maps.Settle since the one before.
	w := maps.NewPolicyWriter(pm)
	applies := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); applies++ {
		p := byAccount
		if applies%2 == 1 {
			p = byClass
		}
		if err := w.Write(p); err != nil {
			t.Error(err)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	st := f.Stats(t).Classes[cac.SIPInvite]
	d := maps.ClassStats{Admitted: st.Admitted - before.Admitted}
	for r := range d.Rejected {
		d.Rejected[r] = st.Rejected[r] - before.Rejected[r]
	}
	t.Logf("%d applies under %d calls: %d rejected by account, %d by class, %d admitted",
		applies, runs.Load(), d.Rejected[cac.ReasonAccount], d.Rejected[cac.ReasonClass], d.Admitted)
	// A test run interrupted by a signal is run again, so the counters may
	// hold a few more calls than the runs that returned.
	if d.Admitted != 0 || d.Seen() < runs.Load() ||
		d.Rejected[cac.ReasonAccount]+d.Rejected[cac.ReasonClass] != d.Seen() {
		t.Errorf("calls saw limits of neither policy: %+v", d)
	}
	if d.Rejected[cac.ReasonAccount] == 0 || d.Rejected[cac.ReasonClass] == 0 || applies < 10 {
		t.Errorf("the flood did not run under both policies (%d applies): %+v", applies, d)
	}
}
