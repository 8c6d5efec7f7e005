package fastpath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// TestSpoofedSourcesFillTheTable: a flood of INVITEs from 100,000 spoofed
// IPv6 sources churns a per-source table of 1,024 entries, and the calls
// of a known account and of a session agent, which have buckets of their
// own outside that table, are admitted exactly as the model says, as if
// there were no flood. The table never holds more than its bound.
func TestSpoofedSourcesFillTheTable(t *testing.T) {
	const table = 1024
	f := harness.NewFastPathWith(t, false, func(s *ebpf.CollectionSpec) { s.Maps[bpf.XdpMapSources].MaxEntries = table })
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: harness.MustRate(t, 0.001, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	p.Customers = []bucket.Limit{bucket.Unlimited}
	p.Accounts = []policy.Account{{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Limit: harness.MustRate(t, 1, 20)}}
	p.Agents = []policy.Agent{{Limit: harness.MustRate(t, 2, 30)}}
	f.SetPolicy(t, p)
	agent := netip.MustParseAddr("203.0.113.5")
	f.SetAgentAddrs(t, map[netip.Addr]int{agent: 0})

	// The model never evicts, so it sees only the calls it can judge:
	// the account's and the agent's. The spoofed ones go to the program
	// alone.
	const spoofed, every = 100_000, 100
	admitted := map[string]int{}
	for i := range spoofed {
		var a [16]byte
		copy(a[:], netip.MustParseAddr("2001:db8::1").AsSlice())
		binary.BigEndian.PutUint32(a[4:], uint32(i)) // a /64 of its own
		frame := Frame(Ether{}, IPv6{Src: netip.AddrFrom16(a)}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag))
		if _, err := f.Objs.XdpCac.Run(&ebpf.RunOptions{Data: frame}); err != nil {
			t.Fatal(err)
		}
		if i%every != 0 {
			continue
		}
		f.MustAt(t, 10*second+uint64(i/every)*10_000_000) // 10 ms a round
		for name, src := range map[string]netip.Addr{
			"account": netip.AddrFrom4([4]byte{198, 51, 100, byte(i / every)}),
			"agent":   agent,
		} {
			d, err := f.Decide(harness.InviteFrom(src, f.NextCall()))
			if err != nil {
				t.Fatalf("%s call in round %d: %v", name, i/every, err)
			}
			if !d.Rejected {
				admitted[name]++
			}
		}
	}
	// 9.99 s of rounds: the account's burst of 20 and 1 a second, the
	// agent's burst of 30 and 2 a second.
	if admitted["account"] != 29 || admitted["agent"] != 49 {
		t.Errorf("admitted under the flood: %v; want the account 29, the agent 49", admitted)
	}

	n := harness.Entries(t, f.Objs.Sources)
	if n > table {
		t.Errorf("the per-source table holds %d entries, more than its %d", n, table)
	}
	st := f.Stats(t).Classes[cac.SIPInvite]
	if want := uint64(spoofed + 2*spoofed/every); st.Seen() != want {
		t.Errorf("%d INVITEs counted, want %d", st.Seen(), want)
	}
	t.Logf("table of %d after %d spoofed sources: %d entries; admitted %v; %d spoofed calls rejected by source",
		table, spoofed, n, admitted, st.Rejected[cac.ReasonSource])
}
