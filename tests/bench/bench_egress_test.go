package bench

import (
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// BenchmarkEgress measures ns per packet with BPF_PROG_TEST_RUN for a tc
// program that only returns TC_ACT_UNSPEC (what no egress program costs
// is less still: the ratio is an upper bound of the program's share) and
// for tc_dialogs on what a SIP server sends: other traffic, an INVITE
// toward a stranger (its dialog learnt), an INVITE toward a session agent
// (its transaction known after the first run: the retransmission path),
// and one toward an agent held out of service (refused; past the hand-up
// budget of the second it goes on, counted unanswered). Interleaved
// rounds, each a ratio to the empty program of its round, medians over
// rounds. Run it with `make bench`.
func BenchmarkEgress(b *testing.B) {
	var p policy.Policy
	p.Agents = []policy.Agent{{Connection: harness.MustRate(b, 1e9, 1e9), FailFast: true}, {FailFast: true}}
	objs := loadProduction(b, p, policy.Inputs{})
	agent, down := netip.MustParseAddr("198.51.100.30"), netip.MustParseAddr("198.51.100.31")
	if err := maps.WriteAgentAddrs(objs.Agents, map[netip.Addr]uint32{
		netip.AddrFrom16(agent.As16()): 0, netip.AddrFrom16(down.As16()): 1}); err != nil {
		b.Fatal(err)
	}
	if err := maps.WriteAgentState(objs.AgentState, 1, true); err != nil {
		b.Fatal(err)
	}
	spec, err := bpf.LoadTc()
	if err != nil {
		b.Fatal(err)
	}
	replace, err := loader.EgressMaps(spec, &objs.XdpMaps)
	if err != nil {
		b.Fatal(err)
	}
	var tc bpf.TcObjects
	if err := spec.LoadAndAssign(&tc, &ebpf.CollectionOptions{MapReplacements: replace}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tc.Close() })
	empty, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "empty_tc", Type: ebpf.SchedCLS, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, -1), asm.Return()},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { empty.Close() })

	server := netip.MustParseAddr("192.0.2.10")
	inviteTo := func(dst netip.Addr) []byte {
		return Frame(Ether{}, IPv4{Src: server, Dst: dst}, UDP{Src: 5060, Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag))
	}
	tcp := Frame(Ether{}, IPv4{Src: server, Dst: agent}, TCP{Src: 443, Dst: 40000}, Raw(make([]byte, 64)))
	cases := []benchCase{
		{"empty", "tc program returning TC_ACT_UNSPEC, on TCP", empty, tcp},
		{"tcp", "other traffic (TCP)", tc.TcDialogs, tcp},
		{"udp53", "other traffic (UDP 53)", tc.TcDialogs, Frame(Ether{}, IPv4{Src: server}, UDP{Src: 40000, Dst: 53}, Raw(make([]byte, 64)))},
		{"bye", "SIP BYE toward an agent", tc.TcDialogs, Frame(Ether{}, IPv4{Src: server, Dst: agent}, UDP{Src: 5060, Dst: 5060}, SIPRequest("BYE", harness.ToTag))},
		{"invite-stranger", "INVITE toward a stranger (dialog learnt)", tc.TcDialogs, inviteTo(netip.MustParseAddr("203.0.113.50"))},
		{"invite-agent", "INVITE toward an agent, its transaction known", tc.TcDialogs, inviteTo(agent)},
		{"invite-down", "INVITE toward an agent out of service, refused (past the hand-up budget: goes on)", tc.TcDialogs, inviteTo(down)},
	}
	report(b, "frame going out", cases, 15, 200_000)
}
