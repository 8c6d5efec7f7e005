package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// generator is an XDP program that sends every frame it is run on out of
// ifindex; with randomAt > 0 it first writes 4 random bytes there, so that
// every frame comes from another source. Run in live-frame mode it is a
// traffic generator that needs no user-space copy per packet.
func generator(b *testing.B, ifindex, randomAt int) *ebpf.Program {
	b.Helper()
	if randomAt > 0 {
		return spoofGen(b, ifindex, spoofWord, randomAt, 0)
	}
	return spoofGen(b, ifindex, spoofNone, 0, 0)
}

// flood sends n copies of frame from the peer end in live-frame mode and
// returns how long it took.
func flood(b *testing.B, tb *harness.Testbed, gen *ebpf.Program, frame []byte, n uint32) time.Duration {
	b.Helper()
	var elapsed time.Duration
	err := testenv.Do(tb.Peer, func() error {
		start := time.Now()
		_, err := gen.Run(&ebpf.RunOptions{Data: frame, Repeat: n, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
		elapsed = time.Since(start)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// BenchmarkFlood floods PADIs through a live veth pair and compares the
// rate at which the box side drops them: xdpcac with a class limit, from
// one source and from a new source every frame, against an nftables
// netdev-ingress limit rule on the same veth.
func BenchmarkFlood(b *testing.B) {
	testenv.RequireBPF(b)
	testenv.RequireTool(b, "nft", "nftables") // make bench installs it
	tb := &harness.Testbed{Box: testenv.Netns(b), Peer: testenv.Netns(b), State: harness.StateDir(b)}
	tb.BoxIface, tb.PeerIfc = testenv.Veth(b, tb.Box, tb.Peer)
	var peerIndex int
	if err := testenv.Do(tb.Peer, func() error {
		l, err := netlink.LinkByName(tb.PeerIfc)
		peerIndex = l.Attrs().Index
		return err
	}); err != nil {
		b.Fatal(err)
	}
	padi := Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	one, spoofed := generator(b, peerIndex, 0), generator(b, peerIndex, 8) // MAC bytes 2–5
	const n = 2_000_000

	// nftables first, on a veth with NAPI (GRO on) and no XDP program.
	testenv.Run(b, tb.Box, "ethtool", "-K", tb.BoxIface, "gro", "on")
	rules := fmt.Sprintf(`table netdev xdpcac_bench {
	chain ingress {
		type filter hook ingress device %q priority 0;
		ether type 0x8863 limit rate over 1/second counter drop
	}
}`, tb.BoxIface)
	rulesFile := b.TempDir() + "/rules.nft"
	os.WriteFile(rulesFile, []byte(rules), 0o600)
	testenv.Run(b, tb.Box, "nft", "-f", rulesFile)
	nftTime := flood(b, tb, one, padi, n)
	out, _ := testenv.Command(tb.Box, "nft", "list", "table", "netdev", "xdpcac_bench").CombinedOutput()
	var nftDropped uint64
	if i := strings.Index(string(out), "packets "); i >= 0 {
		fmt.Sscanf(string(out)[i:], "packets %d", &nftDropped)
	}
	testenv.Run(b, tb.Box, "nft", "delete", "table", "netdev", "xdpcac_bench")

	// The floor: a program that drops everything, so that what the
	// generator itself costs on this CPU can be told apart.
	drop, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "drop_all", Type: ebpf.XDP, License: "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}})
	if err != nil {
		b.Fatal(err)
	}
	defer drop.Close()
	setXDP := func(fd int) {
		if err := testenv.Do(tb.Box, func() error {
			l, err := netlink.LinkByName(tb.BoxIface)
			if err != nil {
				return err
			}
			return netlink.LinkSetXdpFd(l, fd)
		}); err != nil {
			b.Fatal(err)
		}
	}
	setXDP(drop.FD())
	floorTime := flood(b, tb, one, padi, n)
	setXDP(-1)

	cfg := harness.WriteConfig(b, "classes:\n  pppoe-padi: {cps: 1, burst: 1}\n")
	if out, err := exec.Command(harness.CacctlBin, "--netns", tb.Box, "--state-dir", tb.State, "attach", tb.BoxIface, "--config", cfg).CombinedOutput(); err != nil {
		b.Fatalf("attach: %v: %s", err, out)
	}
	b.Cleanup(func() {
		exec.Command(harness.CacctlBin, "--netns", tb.Box, "--state-dir", tb.State, "detach", tb.BoxIface).Run()
	})
	seen := func() uint64 {
		out, err := exec.Command(harness.CacctlBin, "--state-dir", tb.State, "show", "stats", "-o", "json").Output()
		if err != nil {
			b.Fatal(err)
		}
		var n uint64
		if i := strings.Index(string(out), `"pppoe-padi": {`); i >= 0 {
			fmt.Sscanf(string(out)[i:], "\"pppoe-padi\": {\n      \"seen\": %d", &n)
		}
		return n
	}
	for b.Loop() {
		oneTime := flood(b, tb, one, padi, n)
		afterOne := seen()
		spoofTime := flood(b, tb, spoofed, padi, n)
		afterSpoof := seen() - afterOne
		rate := func(k uint64, d time.Duration) float64 { return float64(k) / d.Seconds() }
		nftRate, oneRate, spoofRate := rate(nftDropped, nftTime), rate(afterOne, oneTime), rate(afterSpoof, spoofTime)
		// Time per packet beyond the drop-all floor: the box side's own work.
		beyond := func(d time.Duration) float64 { return float64(d-floorTime) / n }
		fmt.Fprintf(os.Stdout, "\n%d PADIs sent per case from the peer in live-frame mode\n", n)
		fmt.Fprintf(os.Stdout, "XDP drop-all floor: %v: %.2f Mpps\n", floorTime, rate(n, floorTime)/1e6)
		fmt.Fprintf(os.Stdout, "beyond the floor, per packet: nftables %.1f ns, xdpcac %.1f ns (%.2f×)\n",
			beyond(nftTime), beyond(oneTime), beyond(nftTime)/beyond(oneTime))
		fmt.Fprintf(os.Stdout, "nftables limit rule: %d dropped in %v: %.2f Mpps\n", nftDropped, nftTime, nftRate/1e6)
		fmt.Fprintf(os.Stdout, "xdpcac, one source: %d seen in %v: %.2f Mpps (%.2f× nftables)\n", afterOne, oneTime, oneRate/1e6, oneRate/nftRate)
		fmt.Fprintf(os.Stdout, "xdpcac, spoofed sources: %d seen in %v: %.2f Mpps (%.2f× one source)\n", afterSpoof, spoofTime, spoofRate/1e6, spoofRate/oneRate)
		b.ReportMetric(oneRate/nftRate, "xdp-x-nft")
		b.ReportMetric(beyond(nftTime)/beyond(oneTime), "nft-ns-x-xdp-ns")
		b.ReportMetric(spoofRate/oneRate, "spoofed-x-one")
	}
}
