package fleet_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
	"github.com/xdpcac/xdpcac/tests/harness"
	"github.com/xdpcac/xdpcac/tests/testenv"
	"golang.org/x/sys/unix"
)

// box is one box of a fleet: a testbed with its own daemon and state
// directory, and the pinned counters the test reads its admissions from.
type box struct {
	tb     *harness.Testbed
	d      *harness.Daemon
	cfg    string
	pinned *loader.Pinned
	// calls numbers the box's calls over the whole test: a Call-ID sent
	// again within Timer B would be a retransmission, passed uncharged.
	calls atomic.Uint64
	// class is what the box's calls are, and frame makes its nth.
	class cac.Class
	frame func(i int, n uint64) []byte
}

// invite is the nth INVITE of box i, a new call of the account's.
func invite(i int, n uint64) []byte {
	src := netip.AddrFrom4([4]byte{198, 51, 100, byte(10 + i)})
	return Frame(Ether{}, IPv4{Src: src}, UDP{Dst: 5060}, SIPRequest("INVITE", harness.ToNoTag).
		With("Call-ID", fmt.Sprintf("fleet-%d-%d@%s", i, n, src)).
		With("Via", fmt.Sprintf("SIP/2.0/UDP %s:5060;branch=z9hG4bK-%d-%d", src, i, n)))
}

// fleetConfig is the configuration of box i: a customer whose one
// account holds every INVITE the generators send, cps 100 for the whole
// fleet.
func fleetConfig(iface, sock string, i int, onLost string, extra string) string {
	return fleetConfigOn(iface, filepath.Base(filepath.Dir(sock)), "{addresses: ["+sock+"]}", i, onLost, extra)
}

// fleetConfigOn is fleetConfig of the fleet name on the redis block given.
func fleetConfigOn(iface, name, redis string, i int, onLost string, extra string) string {
	return fmt.Sprintf(`interfaces: [{name: %s}]
ports: {sip: [5060]}
customers:
  - name: acme
    cps: 100
    burst: 100
    scope: fleet
    accounts:
      - {name: pbx, source: 198.51.100.0/24}
fleet:
  name: %s
  member: box%d
  redis: %s
  on-fleet-lost: %s
%s`, iface, name, i, redis, onLost, extra)
}

// startBoxes starts n boxes on the Redis at sock.
func startBoxes(t *testing.T, n int, sock, onLost string) []*box {
	t.Helper()
	return startBoxesWith(t, n, func(iface string, i int) string { return fleetConfig(iface, sock, i, onLost, "") })
}

// startBoxesWith starts n boxes, box i with the configuration cfgOf
// gives for its interface.
func startBoxesWith(t *testing.T, n int, cfgOf func(iface string, i int) string) []*box {
	t.Helper()
	boxes := make([]*box, n)
	for i := range boxes {
		b := &box{tb: harness.NewTestbed(t), class: cac.SIPInvite}
		b.cfg = harness.WriteConfig(t, cfgOf(b.tb.BoxIface, i))
		b.d = b.tb.StartDaemon(t, b.cfg)
		p, err := loader.OpenShared(b.tb.State)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		b.pinned = p
		boxes[i] = b
	}
	return boxes
}

// admitted is the INVITEs the box's filter admitted so far.
func (b *box) admitted(t *testing.T) uint64 {
	st, err := maps.ReadStats(b.pinned.Stats)
	if err != nil {
		t.Fatal(err)
	}
	return st.Classes[b.class].Admitted
}

func total(t *testing.T, boxes []*box) uint64 {
	var n uint64
	for _, b := range boxes {
		n += b.admitted(t)
	}
	return n
}

// generate sends INVITEs, each a new call, to every box for d: box i at
// rate(i, elapsed) calls a second, paced in 5 ms steps. It returns when
// all are sent.
func generate(t *testing.T, boxes []*box, d time.Duration, rate func(i int, at time.Duration) float64) {
	t.Helper()
	var wg sync.WaitGroup
	start := time.Now()
	for i, b := range boxes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := testenv.Do(b.tb.Peer, func() error {
				fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				ifi, err := testenv.InterfaceIndex(b.tb.PeerIfc)
				if err != nil {
					return err
				}
				addr := &unix.SockaddrLinklayer{Ifindex: ifi, Halen: 6}
				frame := b.frame
				if frame == nil {
					frame = invite
				}
				owed := 0.0
				for step := time.Duration(0); ; step += 5 * time.Millisecond {
					at := time.Until(start.Add(step))
					if at > 0 {
						time.Sleep(at)
					}
					elapsed := time.Since(start)
					if elapsed >= d {
						return nil
					}
					owed += rate(i, elapsed) * 0.005
					for ; owed >= 1; owed-- {
						f := frame(i, b.calls.Add(1))
						if err := unix.Sendto(fd, f, 0, addr); err != nil {
							return fmt.Errorf("send: %w", err)
						}
					}
				}
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// fleetRun generates for d and returns what the boxes admitted in it.
func fleetRun(t *testing.T, boxes []*box, d time.Duration, rate func(int, time.Duration) float64) uint64 {
	t.Helper()
	before := total(t, boxes)
	generate(t, boxes, d, rate)
	time.Sleep(100 * time.Millisecond) // the last frames through XDP
	return total(t, boxes) - before
}

// TestFleetOfTenBoxes: ten boxes, each its own namespace, veth, daemon and
// state directory, share one customer of cps 100, burst 100, scope fleet,
// through one redis-server. For 20 s the generators offer twice the rate,
// evenly, 90 % to one box, and moving from box to box every 2 s: the
// fleet admits at most 100 × 20 + 100 each time, and at least 95 %, 95 %
// and 90 % of it.
func TestFleetOfTenBoxes(t *testing.T) {
	testenv.RequireBPF(t)
	sock := startRedis(t)
	boxes := startBoxes(t, 10, sock, "local")
	const d = 20 * time.Second
	bound := 100*d.Seconds() + 100
	for _, c := range []struct {
		name  string
		rate  func(int, time.Duration) float64
		least float64
	}{
		{"even", func(int, time.Duration) float64 { return 20 }, 0.95},
		{"90% to one box", func(i int, _ time.Duration) float64 {
			if i == 0 {
				return 180
			}
			return 20.0 / 9
		}, 0.95},
		{"moving every 2 s", func(i int, at time.Duration) float64 {
			if i == int(at/(2*time.Second))%10 {
				return 200
			}
			return 0
		}, 0.90},
	} {
		time.Sleep(3 * time.Second) // the fleet's bucket fills up again
		got := fleetRun(t, boxes, d, c.rate)
		t.Logf("%s: %d admitted of a bound of %.0f (%.1f%%)", c.name, got, bound, 100*float64(got)/bound)
		if float64(got) > bound {
			t.Errorf("%s: the fleet admitted %d, over 100 × 20 + 100 = %.0f", c.name, got, bound)
		}
		if float64(got) < c.least*bound {
			t.Errorf("%s: the fleet admitted %d, under %.0f%% of %.0f", c.name, got, 100*c.least, bound)
		}
	}
	// show fleet says what the box holds and whom Redis has seen.
	out, stderr, err := boxes[0].tb.Cacctl(t, "show", "fleet", "-o", "json")
	if err != nil {
		t.Fatalf("show fleet: %v: %s", err, stderr)
	}
	var v struct {
		Configured  bool
		State       string
		MembersSeen []struct{ Box string } `json:"members_seen"`
		Limits      []struct {
			Name           string
			Granted, Spent int64
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show fleet -o json: %v\n%s", err, out)
	}
	if !v.Configured || v.State != "fleet" || len(v.MembersSeen) != len(boxes) || len(v.Limits) != 1 ||
		v.Limits[0].Name != "customer/acme" || v.Limits[0].Spent <= 0 || v.Limits[0].Spent > v.Limits[0].Granted {
		t.Errorf("show fleet of box 0:\n%s", out)
	}
	if admitted := int64(boxes[0].admitted(t)); v.Limits[0].Spent != admitted {
		t.Errorf("show fleet says box 0 spent %d tokens; its filter admitted %d", v.Limits[0].Spent, admitted)
	}
}
