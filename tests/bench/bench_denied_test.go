package bench

import (
	"net/netip"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// BenchmarkFastPathDenied is BenchmarkReceiveDenied timed by
// BPF_PROG_TEST_RUN, for hosts whose kernel refuses the live-frame mode
// and to tell apart what each lookup costs: xdp_cac loaded as attach
// loads it, on a flood of new calls (stampProg) from a source on the
// static deny list, in the deny table, or both, against the
// parse-and-drop floor (floorProg) behind the same stamping, in the same
// interleaved rounds; SYNs to 5061 beside floorSYNProg. Each figure is
// a ratio to the floor of the same round, median over rounds.
// BENCHMARKS.md, "Denied sources and SIP connections", has the figures.
func BenchmarkFastPathDenied(b *testing.B) {
	flooded := netip.MustParsePrefix("198.51.100.0/24")
	other := netip.MustParsePrefix("192.0.2.0/24") // on the list, never a source
	frames := map[string]rcvFrame{}
	deniedFrames(b, frames, Ether{})
	invite := rcvFrames(b, Ether{})["invite4"]
	options, syn := frames["options4"], frames["syn4"].data
	udp53 := Frame(Ether{}, IPv4{Src: netip.MustParseAddr("198.51.100.1"), Dst: netip.MustParseAddr("203.0.113.1")},
		UDP{Src: 40000, Dst: 53}, Raw(make([]byte, 33)))

	load := func(p policy.Policy, access func(o *bpf.XdpObjects) error) *ebpf.Program {
		return deniedObjects(b, p, access).XdpCac
	}
	none := func(*bpf.XdpObjects) error { return nil }
	static, auto, both := deniedAccess(flooded, other)
	counting := func(o *bpf.XdpObjects) error { return autoDeny(o.AccessSettings, o.Denied, o.PolicySlot, other, 1<<30) }

	limited := deniedPolicy(b)
	var perSource, connect policy.Policy
	for _, c := range []cac.Class{cac.SIPInvite, cac.SIPOptions, cac.SIPConnect} {
		perSource.Levels[c] = harness.MustRate(b, 1e9, 1e9)
		perSource.PerSource[c] = policy.PerSource{Limit: harness.MustRate(b, 0.001, 1), Key: policy.SourceIP, IPv6Prefix: 64}
	}
	connect.Levels[cac.SIPConnect] = harness.MustRate(b, 1000, 1000)
	connect.PerSource[cac.SIPConnect] = policy.PerSource{Limit: harness.MustRate(b, 10, 10), Key: policy.SourceIP, IPv6Prefix: 64}
	staticP, autoP, bothP := load(limited, static), load(limited, auto), load(limited, both)
	sourceP, countedP, open := load(perSource, none), load(perSource, counting), load(policy.Policy{}, none)

	newCall := func(f rcvFrame, target *ebpf.Program) *ebpf.Program { return stampProg(b, f.calls, 0, target) }
	floor := floorProg(b)
	cases := []benchCase{
		{"floor", "floor: parse to the UDP port, drop (INVITE)", newCall(invite, floor), invite.data},
		{"floor-other", "floor on UDP 53 (parsed, passed)", stampProg(b, nil, 0, floor), udp53},
		{"xdpcac-other", "xdp_cac on UDP 53, access lists and deny table on (never looked at)", stampProg(b, nil, 0, bothP), udp53},
		// access_check's steps alone, in floors of their own.
		{"floor-lpm", "floor and a trie lookup of the source (found)", newCall(invite, floorStepProg(b, stepLPM, flooded)), invite.data},
		{"floor-hash", "floor and a deny-table lookup of the source (found)", newCall(invite, floorStepProg(b, stepHash, flooded)), invite.data},
		{"floor-clock", "floor, the lookup and the coarse clock", newCall(invite, floorStepProg(b, stepClock, flooded)), invite.data},
		{"floor-atomic", "floor, the lookup, the clock and an atomic add", newCall(invite, floorStepProg(b, stepAtomic, flooded)), invite.data},
		{"static-invite", "INVITE from a prefix on the static deny list", newCall(invite, staticP), invite.data},
		{"static-options", "OPTIONS from a prefix on the static deny list", newCall(options, staticP), options.data},
		{"auto-invite", "INVITE from a source in the deny table (lists empty)", newCall(invite, autoP), invite.data},
		{"auto-options", "OPTIONS from a source in the deny table (lists empty)", newCall(options, autoP), options.data},
		{"both-invite", "INVITE from a source in the deny table, lists holding another prefix", newCall(invite, bothP), invite.data},
		{"both-options", "OPTIONS from a source in the deny table, lists holding another prefix", newCall(options, bothP), options.data},
		{"source-invite", "INVITE refused by its per-source bucket (full SIP parse)", newCall(invite, sourceP), invite.data},
		{"source-options", "OPTIONS refused by its per-source bucket (full SIP parse)", newCall(options, sourceP), options.data},
		{"counted-invite", "INVITE refused by its per-source bucket, counted toward auto-deny", newCall(invite, countedP), invite.data},
		{"open-invite", "INVITE, no limit, no access control", newCall(invite, open), invite.data},
		// SYNs (copies of one: no table keys them by port); floor-syn is
		// their floor, the rows' × floor-syn is theirs over its.
		{"floor-syn", "floor-syn: parse to the TCP flags and port, drop (SYN to 5061)", floorSYNProg(b), syn},
		{"static-syn", "SYN from a prefix on the static deny list", staticP, syn},
		{"auto-syn", "SYN from a source in the deny table (lists empty)", autoP, syn},
		{"both-syn", "SYN from a source in the deny table, lists holding another prefix", bothP, syn},
		{"connect-refused", "SYN refused by its sip-connect per-source bucket (10/s)", load(connect, none), syn},
		{"connect-open", "SYN, sip-connect with no limit", open, syn},
	}
	// XDPCAC_DENIED_ONLY keeps only the rows whose slugs it matches (and
	// the floor), to profile one with perf, say.
	if s := os.Getenv("XDPCAC_DENIED_ONLY"); s != "" {
		re := regexp.MustCompile(s)
		cases = slices.DeleteFunc(cases, func(c benchCase) bool { return c.slug != "floor" && !re.MatchString(c.slug) })
	}
	report(b, "frame (a new call each run)", cases, 15, 100_000)
}

// deniedObjects is xdp_cac as attach loads it, with p, SYNs to 5060 and
// synPort sip-connect, and the access maps written by access.
func deniedObjects(b *testing.B, p policy.Policy, access func(o *bpf.XdpObjects) error) *bpf.XdpObjects {
	b.Helper()
	o := loadProduction(b, p, policy.Inputs{})
	if err := sipTCPPorts(o.TcpPorts, 5060, synPort); err != nil {
		b.Fatal(err)
	}
	if err := access(o); err != nil {
		b.Fatal(err)
	}
	return o
}

// deniedPolicy limits the classes of the denied rows' frames to next to
// nothing: a frame that got past access control would be refused by its
// class, after the parse a denial spares.
func deniedPolicy(b *testing.B) policy.Policy {
	var p policy.Policy
	for _, c := range []cac.Class{cac.SIPInvite, cac.SIPOptions, cac.SIPConnect} {
		p.Levels[c] = harness.MustRate(b, 0.001, 1)
	}
	return p
}

// deniedAccess writes the access maps of the denied rows' setups: the
// flooded prefix on the static deny list; its sources in the deny table;
// or in the deny table, with the lists holding another prefix.
func deniedAccess(flooded, other netip.Prefix) (static, auto, both func(o *bpf.XdpObjects) error) {
	static = func(o *bpf.XdpObjects) error { return denyPrefix(o.AccessList, o.PolicySlot, flooded) }
	auto = func(o *bpf.XdpObjects) error { return autoDeny(o.AccessSettings, o.Denied, o.PolicySlot, flooded, 10) }
	both = func(o *bpf.XdpObjects) error {
		if err := denyPrefix(o.AccessList, o.PolicySlot, other); err != nil {
			return err
		}
		return auto(o)
	}
	return static, auto, both
}
