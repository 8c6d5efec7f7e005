package daemon

import (
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// evictConfig admits one PADI per CPE (by MAC) and denies a CPE at its
// first refusal, for ten minutes, in a deny table of the fewest sources
// there may be.
const evictConfig = "classes:\n  pppoe-padi: {cps: 100000, burst: 100000, per-source: {cps: 0.001, burst: 1}}\n" +
	"access: {auto-deny: {refused: 1, within: 10s, deny-for: 10m, table: 1024}}\n" +
	"metrics: {listen: \"127.0.0.1:0\"}\n"

// cpePadis are two PADIs from each of n CPEs, the first of which is
// from, with MACs 02:00:00:…: the second of each is refused by its
// per-source bucket, which denies the CPE.
func cpePadis(from, n int) ([][]byte, []net.HardwareAddr) {
	var frames [][]byte
	var macs []net.HardwareAddr
	for i := from; i < from+n; i++ {
		mac := [6]byte{0x02, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}
		f := pkt.Frame(pkt.Ether{Src: mac, Broadcast: true}, pkt.PPPoE{Code: pkt.PADI})
		frames = append(frames, f, f)
		macs = append(macs, net.HardwareAddr(mac[:]))
	}
	return frames, macs
}

// denyEntries are the entries of the deny table of tb.
func denyEntries(t *testing.T, tb *harness.Testbed) int {
	t.Helper()
	p, err := loader.OpenShared(tb.State)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ds, err := maps.ReadDenied(p.Denied, p.DenyPending, 64)
	if err != nil {
		t.Fatal(err)
	}
	return len(ds)
}

// recordedDenied reports whether the rejects log holds the denied record
// of the CPE mac.
func recordedDenied(t *testing.T, path string, mac net.HardwareAddr) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		var r struct{ Source, Event string }
		if json.Unmarshal([]byte(l), &r) == nil && r.Event == "denied" && r.Source == mac.String() {
			return true
		}
	}
	return false
}

// TestDeniedEvictedCounted (docs/design.md, "Auto-deny"): 3,000 CPEs
// denied into a deny table of 1,024 through the attached filter: the
// daemon counts as evicted every source the fast path added that the
// table does not hold; clear denied takes sources out without counting
// them, and sources that fit add nothing to the count.
func TestDeniedEvictedCounted(t *testing.T) {
	tb := harness.NewTestbed(t)
	d := tb.StartDaemon(t, harness.WriteConfig(t, harness.E2eConfig+"interfaces: [{name: "+tb.BoxIface+"}]\n"+evictConfig))
	const series = "xdpcac_denied_evicted_total"
	// The count is from the daemon's first sweep on: it is exported once
	// that sweep has read the table, and the storm comes after.
	testenv.WaitFor(t, func() bool { return strings.Contains(tb.Metrics(t), "\n"+series+" ") })

	frames, _ := cpePadis(0, 3000)
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).DenyAdded >= 3000 })
	if v := tb.Stats(t); v.DenyAdded != 3000 || v.Classes["pppoe-padi"].Reasons["source"] != 3000 {
		t.Fatalf("added %d to the deny table after %d refusals, want 3,000 of 3,000", v.DenyAdded, v.Classes["pppoe-padi"].Reasons["source"])
	}
	held := denyEntries(t, tb)
	if held > 1024 || held == 0 {
		t.Fatalf("the deny table of 1,024 holds %d", held)
	}
	// The daemon's sweep, once a second, balances the table: nothing
	// else changes it now.
	var evicted uint64
	if !testenv.Poll(10*time.Second, 100*time.Millisecond, func() bool {
		evicted = metric(t, tb.Metrics(t), series)
		return evicted == uint64(3000-held)
	}) {
		t.Fatalf("%s = %d, want %d: 3,000 added, %d held", series, evicted, 3000-held, held)
	}
	t.Logf("3,000 CPEs denied into a table of 1,024: %d held, %d counted evicted", held, evicted)

	// Cleared by hand: not evictions.
	if out, stderr, err := tb.Cacctl(t, "clear", "denied", "all"); err != nil {
		t.Fatalf("clear denied all: %v: %s%s", err, out, stderr)
	}
	if n := denyEntries(t, tb); n != 0 {
		t.Fatalf("after clear denied all the table holds %d", n)
	}
	// 100 more CPEs fit: once the daemon has recorded the last of them
	// denied, its sweep has balanced them, and the count is where it was.
	frames, macs := cpePadis(3000, 100)
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return recordedDenied(t, d.RejectsLog, macs[len(macs)-1]) })
	if n := denyEntries(t, tb); n != 100 {
		t.Errorf("the table holds %d after 100 CPEs denied into it emptied, want 100", n)
	}
	if n := metric(t, tb.Metrics(t), series); n != evicted {
		t.Errorf("%s = %d after a clear and 100 sources that fit, want %d still", series, n, evicted)
	}
}
