package bench

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The configurations of BenchmarkReceiveDenied's xdpcac setups.
const (
	// deniedConfig limits the classes of the flood: a denied source's
	// frames never come to them.
	deniedConfig = "classes:\n  sip-invite: {cps: 1, burst: 1}\n  sip-options: {cps: 1, burst: 1}\n  sip-connect: {cps: 1, burst: 1}\n"
	// perSourceConfig refuses all but a frame a second of each source by
	// its per-source bucket, after the full SIP parse.
	perSourceConfig = "classes:\n" +
		"  sip-invite: {cps: 1000000000, burst: 1000000000, per-source: {cps: 1, burst: 1}}\n" +
		"  sip-options: {cps: 1000000000, burst: 1000000000, per-source: {cps: 1, burst: 1}}\n"
	// synConfig is the sip-connect limits of the SYN rows; nftables' rules
	// below are the same limits.
	synConfig = "classes:\n  sip-connect: {cps: 1000, burst: 1000, per-source: {cps: 10, burst: 10}}\n"
)

// nftables' equivalents of synConfig: a per-source meter of 10 a second
// (burst 10) and a limit of 1,000 a second (burst 1,000) of SYNs to
// synPort, at netdev ingress on the TCP flags (no conntrack), or at
// prerouting after conntrack on ct state new.
const (
	nftSrcSet  = "\tset src4 { type ipv4_addr; size 65535; flags dynamic,timeout; timeout 10s; }\n"
	nftSynRule = "\t\tMATCH add @src4 { ip saddr limit rate over 10/second burst 10 packets } counter drop\n" +
		"\t\tMATCH limit rate over 1000/second burst 1000 packets counter drop\n"
	nftSynMatch = "tcp dport 5061 tcp flags & (syn | ack) == syn"
	nftCtMatch  = "ct state new tcp dport 5061"
)

// BenchmarkReceiveDenied is BenchmarkReceiveCPU's measure (the NAPI
// thread's CPU per frame received, flat out and paced, three rounds) of
// what a denied source's flood costs, against the floor of the same
// round: INVITEs and OPTIONS (new calls) and SYNs to a SIP TLS port from
// a source on the static deny list, or in the deny table with auto-deny
// on, with the lists also holding another prefix or not; for contrast,
// the same INVITEs refused by their per-source bucket after the full SIP
// parse. Then a SYN flood to synPort, from one source and from 256,
// under sip-connect limits, beside nftables' rules of the same limits,
// at netdev ingress and after conntrack. BENCHMARKS.md, "Denied sources
// and SIP connections", has the method and figures.
func BenchmarkReceiveDenied(b *testing.B) {
	testenv.RequireBPF(b)
	testenv.RequireTool(b, "nft", "nftables")
	testenv.RequireTool(b, "ethtool", "ethtool")
	rb := newRcvBench(b, testenv.Veth)
	deniedFrames(b, rb.frames, Ether{Dst: testenv.HardwareAddr(b, rb.tb.Box, rb.tb.BoxIface)})
	flooded := netip.MustParsePrefix("198.51.100.0/24") // every source of the rows
	other := netip.MustParsePrefix("192.0.2.0/24")      // on the list, never a source

	// syn is a SYN row under prefix, from 256 sources or one; its floor
	// is floor/syn4 of the same sources.
	syn := func(prefix string, sources bool, matched func() uint64) rcvRow {
		frame, name := "syn4", "syn4"
		if sources {
			frame, name = "syn4-sources", "syn4-spoofed"
		}
		return rcvRow{name: prefix + "/" + name, floor: "floor/" + name, frame: rb.frames[frame].data, matched: matched,
			pace: func(spin int) rcvGen { return rb.rowGen(frame, true, spin) }}
	}
	// udp are rows of INVITE and OPTIONS of one source, and of INVITE
	// spoofed within flooded, each a ratio to the floor of its frame.
	udp := func(prefix string, matched func(frame string) func() uint64) []rcvRow {
		return []rcvRow{
			rb.row(prefix, "invite4", "invite4", false, matched("sip-invite")),
			rb.row(prefix, "options4", "options4", false, matched("sip-options")),
			rb.row(prefix, "invite4", "invite4-spoofed", true, matched("sip-invite")),
		}
	}
	denied := func(auto bool) func(string) func() uint64 {
		return func(string) func() uint64 { return rb.deniedCount(auto) }
	}
	// xdpcac attaches with cfg, SYNs to 5060 and 5061 being sip-connect,
	// then writes the access maps with more.
	xdpcac := func(cfg string, more func()) func() {
		attach := rb.attach(cfg)
		return func() {
			attach()
			rb.sipTCPPorts(5060, synPort)
			more()
		}
	}
	static := func() { rb.denyPrefix(flooded) }
	auto := func() { rb.autoDeny(flooded, 10) }
	autoAndLists := func() { rb.denyPrefix(other); rb.autoDeny(flooded, 10) }
	// Auto-deny on, a refusal counted toward it, never reached.
	counting := func() { rb.autoDeny(other, 1<<30) }
	netdevUp, netdevDown := rb.nftTable("netdev", nftSrcSet+"\tchain ingress {\n\t\ttype filter hook ingress device \""+rb.tb.BoxIface+
		"\" priority 0;\n"+strings.ReplaceAll(nftSynRule, "MATCH", nftSynMatch)+"\t}\n", false)
	ctUp, ctDown := rb.nftTable("inet", nftSrcSet+"\tchain pre {\n\t\ttype filter hook prerouting priority 0;\n"+
		strings.ReplaceAll(nftSynRule, "MATCH", nftCtMatch)+"\t}\n", true)
	ctLimitUp, ctLimitDown := rb.nftTable("inet", "\tchain pre {\n\t\ttype filter hook prerouting priority 0;\n\t\t"+nftCtMatch+
		" limit rate over 1000/second burst 1000 packets counter drop\n\t}\n", true)

	setups := []rcvSetup{
		{up: rb.xdp(floorProg(b)), down: rb.noXDP, rows: []rcvRow{
			rb.row("floor", "invite4", "", false, nil), rb.row("floor", "options4", "", false, nil),
			rb.row("floor", "invite4", "", true, nil)}},
		{up: rb.xdp(floorSYNProg(b)), down: rb.noXDP, rows: []rcvRow{syn("floor", false, nil), syn("floor", true, nil)}},
		{up: xdpcac(deniedConfig, static), down: rb.detach, rows: append(udp("static-deny", denied(false)),
			syn("static-deny", false, rb.deniedCount(false)))},
		{up: xdpcac(deniedConfig, auto), down: rb.detach, rows: append(udp("auto-deny", denied(true)),
			syn("auto-deny", false, rb.deniedCount(true)))},
		{up: xdpcac(deniedConfig, autoAndLists), down: rb.detach, rows: udp("auto+lists", denied(true))[:2]},
		{up: xdpcac(perSourceConfig, func() {}), down: rb.detach, rows: udp("per-source", rb.classSeen)},
		{up: xdpcac(perSourceConfig, counting), down: rb.detach, rows: udp("per-source-counted", rb.classSeen)[:1]},
		{up: xdpcac(synConfig, func() {}), down: rb.detach, rows: []rcvRow{
			syn("xdpcac-syn", false, rb.classSeen("sip-connect")), syn("xdpcac-syn", true, rb.classSeen("sip-connect"))}},
		{up: netdevUp, down: netdevDown, rows: []rcvRow{
			syn("nft-syn", false, rb.nftDropped("netdev")), syn("nft-syn", true, rb.nftDropped("netdev"))}},
		{up: ctLimitUp, down: ctLimitDown, rows: []rcvRow{
			syn("nft-ct-limit", false, rb.nftDropped("inet")), syn("nft-ct-limit", true, rb.nftDropped("inet"))}},
		{up: ctUp, down: ctDown, rows: []rcvRow{
			syn("nft-ct-meter", false, rb.nftDropped("inet")), syn("nft-ct-meter", true, rb.nftDropped("inet"))}},
	}
	var (
		order       []string
		flat, paced map[string][]rcvSample
		flatToo     bool
	)
	for b.Loop() {
		order, flat, paced, flatToo = rb.measureSetups(setups, func(string) bool { return false })
	}
	if flatToo {
		reportDenied(b, "flat out, "+rb.genName(), "", order, setups, flat, rb.n)
	}
	reportDenied(b, "paced, "+rb.genName(), "paced-", order, setups, paced, rb.n)
}

// reportDenied prints one table of BenchmarkReceiveDenied and its
// figures, as reportReceiveCPU does BenchmarkReceiveCPU's.
func reportDenied(b *testing.B, how, prefix string, order []string, setups []rcvSetup, results map[string][]rcvSample, n uint32) {
	ratio := receiveTable(how, order, setups, results, n)
	target, note := receiveTargets(b, how, prefix)
	frames := []struct{ row, what string }{
		{"invite4", "INVITE"}, {"options4", "OPTIONS"}, {"invite4-spoofed", "INVITE, 256 sources"}, {"syn4", "SYN to 5061"},
	}
	for _, how := range []struct{ setup, what string }{
		{"static-deny", "static deny list"}, {"auto-deny", "deny table"}, {"auto+lists", "deny table, lists holding another prefix"},
	} {
		for _, f := range frames {
			target(f.what+" from a source on the "+how.what+", x floor", ratio(how.setup+"/"+f.row, "floor/"+f.row), "<=", 1.3,
				how.setup+"-"+f.row+"-x-floor")
		}
	}
	for _, f := range frames[:3] {
		note(f.what+" refused by its per-source bucket, x floor", ratio("per-source/"+f.row, "floor/"+f.row),
			"source-"+f.row+"-x-floor", "the full SIP parse")
		note(f.what+" refused by its bucket ns / denied (static) ns", ratio("per-source/"+f.row, "static-deny/"+f.row),
			"source-"+f.row+"-x-denied", "what a denial saves")
	}
	note("INVITE refused, counted toward auto-deny / not counted", ratio("per-source-counted/invite4", "per-source/invite4"),
		"counted-x-refused", "deny_count")
	for _, sp := range []string{"", "-spoofed"} {
		x := "xdpcac-syn/syn4" + sp
		what := "SYN under sip-connect limits" + strings.ReplaceAll(sp, "-", ", ")
		note(what+", x floor", ratio(x, "floor/syn4"+sp), "syn"+sp+"-x-floor", "a class and a per-source bucket")
		for _, nft := range []string{"nft-syn", "nft-ct-limit", "nft-ct-meter"} {
			note(what+", "+nft+" ns / xdpcac ns", ratio(nft+"/syn4"+sp, x), nft+sp+"-x-xdpcac", "the same limits in nftables")
		}
	}
}

// TestDeniedPrograms runs the SYN floor and the SYN generators once:
// the floor drops the SYN rows' frame and passes a SYN-ACK to the same
// port, and the generators write a new port, and source, that leave the
// IPv4 and TCP checksums right.
func TestDeniedPrograms(t *testing.T) {
	testenv.RequireBPF(t)
	frames := map[string]rcvFrame{}
	deniedFrames(t, frames, Ether{})
	floor := floorSYNProg(t)
	syn := frames["syn4"].data
	if got, _, err := floor.Test(syn); err != nil || got != xdpDrop {
		t.Errorf("floor-syn on a SYN: %d, %v; want a drop", got, err)
	}
	synAck := slices.Clone(syn)
	synAck[14+20+13] |= 0x10
	if got, _, err := floor.Test(synAck); err != nil || got != xdpPass {
		t.Errorf("floor-syn on a SYN-ACK: %d, %v; want a pass", got, err)
	}
	if tcpSum(syn) != 0xffff {
		t.Fatal("the SYN's TCP checksum is wrong")
	}
	for _, name := range []string{"syn4", "syn4-sources"} {
		f := frames[name]
		gen := frameGen(t, 1, genSpec{kind: f.spoof.kind, off: f.spoof.off})
		ports, sources := map[uint16]bool{}, map[byte]bool{}
		for range 64 {
			_, out, err := gen.Test(f.data)
			if err != nil || len(out) != len(f.data) {
				t.Fatalf("generator of %s: %v, %d bytes", name, err, len(out))
			}
			if ipSum(out[14:14+20]) != 0xffff || tcpSum(out) != 0xffff {
				t.Fatalf("generator of %s: a checksum is wrong", name)
			}
			if got, _, _ := floor.Test(out); got != xdpDrop {
				t.Errorf("generator of %s: floor-syn passed what it wrote", name)
			}
			ports[uint16(out[14+20])<<8|uint16(out[14+20+1])], sources[out[14+15]] = true, true
		}
		if len(ports) < 32 || (name == "syn4") != (len(sources) == 1) {
			t.Errorf("generator of %s: %d ports and %d sources of 64 frames", name, len(ports), len(sources))
		}
	}
}
