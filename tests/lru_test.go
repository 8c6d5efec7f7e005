package tests

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
)

// TestSpoofedSourcesFillTheTable: a flood of INVITEs from 100,000 spoofed
// IPv6 sources churns a per-source table of 1,024 entries, and the calls
// of a known account and of a session agent, which have buckets of their
// own outside that table, are admitted exactly as the model says, as if
// there were no flood. The table never holds more than its bound.
func TestSpoofedSourcesFillTheTable(t *testing.T) {
	const table = 1024
	f := newFastPathWith(t, false, func(s *ebpf.CollectionSpec) { s.Maps[bpf.XdpMapSources].MaxEntries = table })
	var p policy.Policy
	p.PerSource[cac.SIPInvite] = policy.PerSource{Limit: mustRate(t, 0.001, 2), Key: policy.SourceIP, IPv6Prefix: 64}
	p.Customers = []bucket.Limit{bucket.Unlimited}
	p.Accounts = []policy.Account{{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Limit: mustRate(t, 1, 20)}}
	p.Agents = []policy.Agent{{Limit: mustRate(t, 2, 30)}}
	f.setPolicy(t, p)
	agent := netip.MustParseAddr("203.0.113.5")
	f.setAgentAddrs(t, map[netip.Addr]int{agent: 0})

	// The model never evicts, so it sees only the calls it can judge:
	// the account's and the agent's. The spoofed ones go to the program
	// alone.
	const spoofed, every = 100_000, 100
	admitted := map[string]int{}
	for i := range spoofed {
		var a [16]byte
		copy(a[:], netip.MustParseAddr("2001:db8::1").AsSlice())
		binary.BigEndian.PutUint32(a[4:], uint32(i)) // a /64 of its own
		frame := Frame(Ether{}, IPv6{Src: netip.AddrFrom16(a)}, UDP{Dst: 5060}, SIPRequest("INVITE", toNoTag))
		if _, err := f.objs.XdpCac.Run(&ebpf.RunOptions{Data: frame}); err != nil {
			t.Fatal(err)
		}
		if i%every != 0 {
			continue
		}
		f.mustAt(t, 10*second+uint64(i/every)*10_000_000) // 10 ms a round
		for name, src := range map[string]netip.Addr{
			"account": netip.AddrFrom4([4]byte{198, 51, 100, byte(i / every)}),
			"agent":   agent,
		} {
			d, err := f.decide(inviteFrom(src, f.nextCall()))
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

	n := entries(t, f.objs.Sources)
	if n > table {
		t.Errorf("the per-source table holds %d entries, more than its %d", n, table)
	}
	st := f.stats(t).Classes[cac.SIPInvite]
	if want := uint64(spoofed + 2*spoofed/every); st.Seen() != want {
		t.Errorf("%d INVITEs counted, want %d", st.Seen(), want)
	}
	t.Logf("table of %d after %d spoofed sources: %d entries; admitted %v; %d spoofed calls rejected by source",
		table, spoofed, n, admitted, st.Rejected[cac.ReasonSource])
}

// entries counts what a map holds.
func entries(t *testing.T, m *ebpf.Map) int {
	t.Helper()
	n := 0
	key, val := make([]byte, m.KeySize()), make([]byte, m.ValueSize())
	it := m.Iterate()
	for it.Next(&key, &val) {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
