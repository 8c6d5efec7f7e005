package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// The setups of the box side that are not XDP programs of the benchmark's
// own, and the counters that say what share of a row's frames each
// matched: BenchmarkReceiveCPU fails a row under 90 %, which tells a rule
// that no longer holds the flood back from a cheap one.

// classSeen counts the frames xdpcac classified as class: its seen in
// cacctl show stats.
func (r *rcvBench) classSeen(class string) func() uint64 {
	return func() uint64 {
		out, err := exec.Command(harness.CacctlBin, "--state-dir", r.tb.State, "show", "stats", "-o", "json").Output()
		if err != nil {
			r.b.Fatal(err)
		}
		var st struct {
			Classes map[string]struct{ Seen, Rejected uint64 }
		}
		if err := json.Unmarshal(out, &st); err != nil {
			r.b.Fatal(err)
		}
		return st.Classes[class].Seen
	}
}

// nftRules brings up a netdev ingress chain of rules on the box veth (no
// XDP program, so the frames are skbs), beside a set a meter may use.
func (r *rcvBench) nftRules(rules string) (up, down func()) {
	file := r.b.TempDir() + "/rules.nft"
	body := fmt.Sprintf("table netdev xdpcac_rcv {\n%s\tchain ingress {\n\t\ttype filter hook ingress device %q priority 0;\n%s\t}\n}\n",
		"\tset padi { type ether_addr; size 65535; flags dynamic,timeout; timeout 10s; }\n", r.tb.BoxIface, rules)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		r.b.Fatal(err)
	}
	return func() { testenv.Run(r.b, r.tb.Box, "nft", "-f", file) },
		func() { testenv.Command(r.tb.Box, "nft", "delete", "table", "netdev", "xdpcac_rcv").Run() }
}

// nftCounter reads the counter of the i-th rule of nftRules' chain.
func (r *rcvBench) nftCounter(i int) func() uint64 {
	return func() uint64 {
		out := testenv.Run(r.b, r.tb.Box, "nft", "list", "chain", "netdev", "xdpcac_rcv", "ingress")
		m := regexp.MustCompile(`counter packets (\d+)`).FindAllStringSubmatch(out, -1)
		if len(m) <= i {
			r.b.Fatalf("nft counter %d not in:\n%s", i, out)
		}
		v, _ := strconv.ParseUint(m[i][1], 10, 64)
		return v
	}
}

// iptUp drops INVITEs over a limit per source with iptables' string match
// and hashlimit, in the raw table, with an address on the box veth for the
// run of these rows only: the stack takes the frames up to PREROUTING.
func (r *rcvBench) iptUp() {
	box, bif := r.tb.Box, r.tb.BoxIface
	testenv.Run(r.b, box, "ip", "addr", "add", "203.0.113.1/24", "dev", bif)
	testenv.Run(r.b, box, "iptables", "-t", "raw", "-A", "PREROUTING", "-p", "udp", "--dport", "5060",
		"-m", "string", "--algo", "bm", "--string", "INVITE ",
		"-m", "hashlimit", "--hashlimit-above", "1/sec", "--hashlimit-mode", "srcip", "--hashlimit-name", "xdpcac_rcv",
		"-j", "DROP")
}

func (r *rcvBench) iptDown() {
	testenv.Command(r.tb.Box, "iptables", "-t", "raw", "-F", "PREROUTING").Run()
	testenv.Command(r.tb.Box, "ip", "addr", "del", "203.0.113.1/24", "dev", r.tb.BoxIface).Run()
}

// iptCounter reads the packets iptUp's rule dropped.
func (r *rcvBench) iptCounter() uint64 {
	out := testenv.Run(r.b, r.tb.Box, "iptables", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n")
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "DROP" {
			v, _ := strconv.ParseUint(f[0], 10, 64)
			return v
		}
	}
	r.b.Fatalf("no DROP rule in:\n%s", out)
	return 0
}
