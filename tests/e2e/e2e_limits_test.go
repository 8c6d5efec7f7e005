package e2e

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/internal/pkt"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// TestFloodAgainstLimits: a flood of INVITEs and PADIs over a real veth
// against a class limit and the environment limit, on the kernel clock.
// What passes must be what the buckets allow for the measured send time.
func TestFloodAgainstLimits(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+`
classes:
  sip-invite: {cps: 5, burst: 10}
environment: {cps: 10, burst: 30}
`)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })

	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	var frames [][]byte
	for i := 0; i < 100; i++ {
		frames = append(frames, harness.V4udp(5060, SIPRequest("INVITE", harness.ToNoTag).With("Call-ID", harness.CallID(i))), padi)
	}
	start := time.Now()
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool {
		s := tb.Stats(t)
		return s.Classes["sip-invite"].Seen == 100 && s.Classes["pppoe-padi"].Seen == 100
	})
	// Refill can only have added calls while frames were still arriving.
	elapsed := time.Since(start).Seconds()
	s := tb.Stats(t)
	inv, pa := s.Classes["sip-invite"], s.Classes["pppoe-padi"]
	t.Logf("in %.3fs: INVITE %+v, PADI %+v", elapsed, inv, pa)
	if inv.Admitted < 10 || float64(inv.Admitted) > 10+5*elapsed+1 {
		t.Errorf("%d INVITEs admitted, want 10 plus at most 5 per second", inv.Admitted)
	}
	total := inv.Admitted + pa.Admitted
	if total < 30 || float64(total) > 30+10*elapsed+1 {
		t.Errorf("%d calls admitted in all, want 30 plus at most 10 per second", total)
	}
	if pa.Reasons["environment"] != pa.Rejected || pa.Rejected == 0 {
		t.Errorf("PADIs must be rejected by the environment only: %+v", pa)
	}
	if inv.Reasons["class"] == 0 || inv.Reasons["class"]+inv.Reasons["environment"] != inv.Rejected {
		t.Errorf("INVITEs must be rejected by their class first: %+v", inv)
	}

	// One source, so one record per class and reason, counting them all.
	out, stderr, err := tb.Cacctl(t, "show", "rejects", "-o", "json")
	if err != nil {
		t.Fatalf("show rejects: %v: %s", err, stderr)
	}
	var recorded uint64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Interface, Class, Source, Reason string
			Count                            uint64
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("show rejects -o json line %q: %v", line, err)
		}
		if r.Interface != tb.Box+":"+tb.BoxIface || (r.Source != pkt.PeerV4.String() && r.Source != "02:00:5e:00:53:01") {
			t.Errorf("record %+v: want interface %s and the peer's address or MAC", r, tb.BoxIface)
		}
		recorded += r.Count
	}
	if recorded != inv.Rejected+pa.Rejected {
		t.Errorf("records count %d rejects, stats %d", recorded, inv.Rejected+pa.Rejected)
	}
	out, _, err = tb.Cacctl(t, "show", "rejects", "--class", "pppoe-padi", "--since", "1m")
	if err != nil || !strings.Contains(out, "pppoe-padi") || strings.Contains(out, "sip-invite") || !strings.Contains(out, "environment") {
		t.Errorf("show rejects --class pppoe-padi: %v\n%s", err, out)
	}
	if _, stderr, err := tb.Cacctl(t, "show", "rejects", "--reason", "bogus"); err == nil || !strings.Contains(stderr, "want one of stale, cpu-limit") {
		t.Errorf("an unknown reason: %v %s", err, stderr)
	}
}

// TestManySources: per-source buckets keep each source to its own burst,
// a source inside an account is held by the account (and its customer)
// instead, and a source flood cannot exceed the class limit.
func TestManySources(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+`
classes:
  sip-invite: {cps: 0.001, burst: 150, per-source: {cps: 0.001, burst: 2}}
customers:
  - name: acme
    cps: 0.001
    burst: 4
    accounts:
      - {name: pbx1, source: 198.51.100.0/28, cps: 0.001, burst: 3}
      - {name: pbx2, source: 198.51.100.16/28, cps: 0.001, burst: 3}
`)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })

	var frames [][]byte
	// 100 sources outside any account, 5 INVITEs each: 2 pass per source
	// and 3 fall to the source level, until the class bucket of 150 runs
	// dry after 75 sources; the last 25 sources fall to the class level,
	// and never enter the per-source table.
	for i := 0; i < 100; i++ {
		src := netip.AddrFrom4([4]byte{203, 0, 113, byte(i)})
		for j := 0; j < 5; j++ {
			frames = append(frames, harness.InviteFrom(src, harness.CallID(len(frames))))
		}
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["sip-invite"].Seen == 500 })
	inv := tb.Stats(t).Classes["sip-invite"]
	if inv.Admitted != 150 || inv.Reasons["source"] != 75*3 || inv.Reasons["class"] != 25*5 {
		t.Errorf("100 sources × 5: %+v, want 150 admitted, 225 by source, 125 by class", inv)
	}
	table, err := ebpf.LoadPinnedMap(filepath.Join(tb.State, tb.Box+":"+tb.BoxIface, "sources"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tracked := harness.Entries(t, table)
	table.Close()
	if tracked != 75 {
		t.Errorf("%d sources in the per-source table, want the 75 that were admitted", tracked)
	}

	// Account sources: no per-source bucket; each account holds 3, the
	// customer 4 in all. The class bucket is dry now, so detach and
	// attach again to start from full buckets.
	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach: %v: %s", err, stderr)
	}
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	frames = nil
	for i := 0; i < 10; i++ {
		frames = append(frames, harness.InviteFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i%3)}), harness.CallID(len(frames))))
	}
	for i := 0; i < 10; i++ {
		frames = append(frames, harness.InviteFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(17 + i%3)}), harness.CallID(len(frames))))
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["sip-invite"].Seen == 20 })
	inv = tb.Stats(t).Classes["sip-invite"]
	if inv.Admitted != 4 || inv.Reasons["account"] != 7 || inv.Reasons["customer"] != 9 || inv.Reasons["source"] != 0 {
		t.Errorf("two accounts of one customer: %+v, want 3 from pbx1 and 1 from pbx2 admitted, 7 by account, 9 by customer", inv)
	}
}

// TestApplyLive: cacctl apply raises a limit on the attached filter; the
// calls already admitted still count, and the counters carry over.
func TestApplyLive(t *testing.T) {
	tb := harness.NewTestbed(t)
	if _, stderr, err := tb.Cacctl(t, "apply", "--config", harness.WriteConfig(t, harness.E2eConfig)); err == nil || !strings.Contains(stderr, "attached to no interface") {
		t.Errorf("apply with nothing attached: %v: %s", err, stderr)
	}
	low := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {cps: 0.001, burst: 5}\n")
	high := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {cps: 0.001, burst: 12}\n")
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", low); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	send := func(n int) {
		frames := make([][]byte, n)
		for i := range frames {
			frames[i] = padi
		}
		testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	}
	send(10)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 10 })
	if got := tb.Stats(t).Classes["pppoe-padi"].Admitted; got != 5 {
		t.Fatalf("%d of 10 PADIs admitted under burst 5", got)
	}
	out, stderr, err := tb.Cacctl(t, "apply", "--config", high)
	if err != nil || !strings.Contains(out, "applied") {
		t.Fatalf("apply: %v: %s%s", err, out, stderr)
	}
	send(10)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 20 })
	if got := tb.Stats(t).Classes["pppoe-padi"]; got.Admitted != 12 || got.Reasons["class"] != 8 {
		t.Errorf("after raising the burst to 12: %+v, want 12 admitted in all and 8 rejected", got)
	}
}

// TestInterfacesShareLimits: two access interfaces of one box share its
// limits: a class burst of 5 admits 5 PADIs over both, not 5 on each; and
// detaching one leaves the other enforcing with the state it had.
func TestInterfacesShareLimits(t *testing.T) {
	tb := harness.NewTestbed(t)
	box2, peer2 := testenv.Veth(t, tb.Box, tb.Peer)
	cfg := harness.WriteConfig(t, harness.E2eConfig+"classes:\n  pppoe-padi: {cps: 0.001, burst: 5}\n")
	for _, iface := range []string{tb.BoxIface, box2} {
		if _, stderr, err := tb.Cacctl(t, "attach", iface, "--config", cfg); err != nil {
			t.Fatalf("attach %s: %v: %s", iface, err, stderr)
		}
		t.Cleanup(func() { tb.Cacctl(t, "detach", iface) })
	}
	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	testenv.Send(t, tb.Peer, tb.PeerIfc, [][]byte{padi, padi, padi, padi})
	testenv.Send(t, tb.Peer, peer2, [][]byte{padi, padi, padi, padi})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 8 })
	if c := tb.Stats(t).Classes["pppoe-padi"]; c.Admitted != 5 || c.Reasons["class"] != 3 {
		t.Errorf("over two interfaces: %+v, want 5 admitted and 3 rejected by class", c)
	}
	if _, stderr, err := tb.Cacctl(t, "detach", tb.BoxIface); err != nil {
		t.Fatalf("detach: %v: %s", err, stderr)
	}
	testenv.Send(t, tb.Peer, peer2, [][]byte{padi, padi})
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["pppoe-padi"].Seen == 6 })
	if c := tb.Stats(t).Classes["pppoe-padi"]; c.Admitted != 1 || c.Rejected != 5 {
		t.Errorf("the interface left: %+v, want its 1 admitted and 5 rejected (the bucket stayed empty)", c)
	}
}

// TestRejectsRolledUp: show rejects --top --prefix sums the rejects of a
// flood spread over a network into one line per prefix, biggest first, as
// the per-source records count them.
func TestRejectsRolledUp(t *testing.T) {
	tb := harness.NewTestbed(t)
	cfg := harness.WriteConfig(t, harness.E2eConfig+`
classes:
  sip-invite: {per-source: {cps: 0.001, burst: 1}}
`)
	if _, stderr, err := tb.Cacctl(t, "attach", tb.BoxIface, "--config", cfg); err != nil {
		t.Fatalf("attach: %v: %s", err, stderr)
	}
	t.Cleanup(func() { tb.Cacctl(t, "detach", tb.BoxIface) })
	// Three INVITEs from each of 20 sources of one /24 and 5 of another:
	// each source's first is admitted, the other two refused by source.
	var frames [][]byte
	n := 0
	for _, net := range []struct {
		prefix  string
		sources int
	}{{"203.0.113.", 20}, {"198.51.100.", 5}} {
		for i := 1; i <= net.sources; i++ {
			src := netip.MustParseAddr(net.prefix + strconv.Itoa(i))
			for range 3 {
				frames = append(frames, harness.InviteFrom(src, harness.CallID(n)))
				n++
			}
		}
	}
	testenv.Send(t, tb.Peer, tb.PeerIfc, frames)
	testenv.WaitFor(t, func() bool { return tb.Stats(t).Classes["sip-invite"].Seen == uint64(n) })

	out, stderr, err := tb.Cacctl(t, "show", "rejects", "--top", "2", "--prefix", "24", "-o", "json")
	if err != nil {
		t.Fatalf("show rejects --top 2 --prefix 24: %v: %s", err, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Source, Reason string
			Count          uint64
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, r.Source+" "+r.Reason+" "+strconv.FormatUint(r.Count, 10))
	}
	if want := []string{"203.0.113.0/24 source 40", "198.51.100.0/24 source 10"}; !slices.Equal(got, want) {
		t.Errorf("show rejects --top 2 --prefix 24: %q, want %q\n%s", got, want, out)
	}
	var ee *exec.ExitError
	if _, stderr, err := tb.Cacctl(t, "show", "rejects", "--prefix", "33"); !errors.As(err, &ee) || ee.ExitCode() != 2 ||
		!strings.Contains(stderr, "--prefix wants a prefix length from 1 to 32") {
		t.Errorf("--prefix 33: %v: %s, want exit 2 (usage) naming the range", err, stderr)
	}
}
