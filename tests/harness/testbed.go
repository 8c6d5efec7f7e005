package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac/agents"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

const E2eConfig = `
ports: {l2tp: [1701], sip: [5060, 5080]}
malformed: pass
`

// Testbed is a box namespace whose interface gets the filter, and a peer
// namespace that sends to it over a veth pair.
type Testbed struct {
	Box, Peer         string // namespaces
	BoxIface, PeerIfc string
	State             string
}

func NewTestbed(t *testing.T) *Testbed {
	testenv.RequireBPF(t)
	tb := &Testbed{Box: testenv.Netns(t), Peer: testenv.Netns(t), State: StateDir(t)}
	tb.BoxIface, tb.PeerIfc = testenv.Veth(t, tb.Box, tb.Peer)
	return tb
}

func (tb *Testbed) Cacctl(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return Cacctl(t, append([]string{"--netns", tb.Box, "--state-dir", tb.State}, args...)...)
}

func (tb *Testbed) Stats(t *testing.T) maps.StatsView {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "show", "stats", "-o", "json")
	if err != nil {
		t.Fatalf("show stats: %v: %s", err, stderr)
	}
	var v maps.StatsView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show stats -o json is not the contract shape: %v\n%s", err, out)
	}
	return v
}

func XdpProgID(t *testing.T, ns, iface string) uint32 {
	t.Helper()
	var id uint32
	err := testenv.Do(ns, func() error {
		l, err := netlink.LinkByName(iface)
		if err != nil {
			return err
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			id = x.ProgId
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// DoNetlink runs fn on the interface iface of namespace ns.
func DoNetlink(t *testing.T, ns, iface string, fn func(netlink.Link) error) {
	t.Helper()
	if err := testenv.Do(ns, func() error {
		l, err := netlink.LinkByName(iface)
		if err != nil {
			return err
		}
		return fn(l)
	}); err != nil {
		t.Fatal(err)
	}
}

// OurEgress is how the box's interface has the egress program, as the
// kernel says: a tcx program of that name, or a bpf filter on egress; ""
// for neither.
func OurEgress(t *testing.T, tb *Testbed) string {
	t.Helper()
	kind := ""
	DoNetlink(t, tb.Box, tb.BoxIface, func(l netlink.Link) error {
		res, err := link.QueryPrograms(link.QueryOptions{Target: l.Attrs().Index, Attach: ebpf.AttachTCXEgress})
		if err == nil {
			for _, p := range res.Programs {
				if prog, err := ebpf.NewProgramFromID(p.ID); err == nil {
					if info, err := prog.Info(); err == nil && info.Name == bpf.TcProgTcDialogs {
						kind = loader.EgressTCX
					}
					prog.Close()
				}
			}
		} else if !errors.Is(err, ebpf.ErrNotSupported) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("query tcx: %w", err)
		}
		if !HasClsactOn(l) {
			return nil
		}
		filters, err := netlink.FilterList(l, netlink.HANDLE_MIN_EGRESS)
		for _, f := range filters {
			if _, ok := f.(*netlink.BpfFilter); ok {
				kind = loader.EgressClsact
			}
		}
		return err
	})
	return kind
}

func HasClsactOn(l netlink.Link) bool {
	qs, _ := netlink.QdiscList(l)
	for _, q := range qs {
		if q.Type() == "clsact" {
			return true
		}
	}
	return false
}

// EgressModes runs fn with the kernel's own choice of attachment (tcx
// where it has it), and then, when that was tcx, with the clsact fallback
// asked for. On a kernel without tcx the first run is the clsact filter
// already, and once is enough. fn returns how the egress program was
// attached.
func EgressModes(t *testing.T, fn func(t *testing.T, clsact bool) string) {
	var kind string
	t.Run("auto", func(t *testing.T) { kind = fn(t, false) })
	if kind != loader.EgressTCX {
		t.Logf("the kernel attached the egress program as %q: no clsact run besides", kind)
		return
	}
	t.Run("clsact", func(t *testing.T) { fn(t, true) })
}

// The box's realm and the peer's addresses, on the testbed's veth.
const (
	BoxIP      = "192.0.2.1"
	AgentIP    = "192.0.2.2"
	StrangerIP = "192.0.2.3"
)

// SipTestbed is a testbed with addresses: the box on 192.0.2.1, the peer
// on 192.0.2.2 (the agent) and 192.0.2.3 (a stranger).
func SipTestbed(t *testing.T) *Testbed {
	tb := NewTestbed(t)
	testenv.Addr(t, tb.Box, tb.BoxIface, BoxIP+"/24")
	testenv.Addr(t, tb.Peer, tb.PeerIfc, AgentIP+"/24")
	testenv.Addr(t, tb.Peer, tb.PeerIfc, StrangerIP+"/24")
	return tb
}

// AgentTargets is show sipd agents -o json.
func (tb *Testbed) AgentTargets(t *testing.T) []agents.Row {
	t.Helper()
	out, stderr, err := tb.Cacctl(t, "show", "sipd", "agents", "-o", "json")
	if err != nil {
		t.Fatalf("show sipd agents: %v: %s", err, stderr)
	}
	var v struct{ Targets []agents.Row }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show sipd agents -o json: %v\n%s", err, out)
	}
	return v.Targets
}

// WaitStatus waits until the target of dest is in (or out of) service and
// returns how long that took; it fails after limit.
func (tb *Testbed) WaitStatus(t *testing.T, dest string, in bool, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		for _, r := range tb.AgentTargets(t) {
			if r.Destination.Addr().String() == dest && r.Status.InService == in {
				return time.Since(start)
			}
		}
		if time.Since(start) > limit {
			t.Fatalf("%s not %s within %v: %+v", dest, map[bool]string{true: "in service", false: "out of service"}[in], limit, tb.AgentTargets(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ListenUDP is a UDP socket on addr inside a namespace.
func ListenUDP(t *testing.T, ns, addr string) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := testenv.Do(ns, func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Metrics scrapes the daemon's /metrics, wherever status says it is.
func (tb *Testbed) Metrics(t *testing.T) string {
	t.Helper()
	out, _, err := tb.Cacctl(t, "status", "-o", "json")
	err = StatusErr(err)
	m := regexp.MustCompile(`"metrics": "([0-9.:]+)"`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("status does not say where metrics are: %v\n%s", err, out)
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// GrepLines is the lines of s that contain sub.
func GrepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
