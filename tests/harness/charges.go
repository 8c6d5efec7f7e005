package harness

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/cpu"
	"github.com/xdpcac/xdpcac/cac/policy"
	. "github.com/xdpcac/xdpcac/internal/pkt"
)

// PolicyOf is the policy of a cac.yaml given as text.
func PolicyOf(t testing.TB, yaml string) policy.Policy {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Of(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Ios is a configuration of call-admission lines alone.
func Ios(lines ...string) string {
	s := "call-admission: |\n"
	for _, l := range lines {
		s += "  call admission " + l + "\n"
	}
	return s
}

// Offer runs n copies of frame at the current clock through the program
// and the model, which must agree on each, and counts what passed and why
// the rest were rejected. Copies of an INVITE are one call and its
// retransmissions; OfferCalls makes n calls.
func (f *FastPath) Offer(t testing.TB, frame []byte, n int) (passed int, reasons map[cac.Reason]int) {
	t.Helper()
	return f.OfferCalls(t, func(string) []byte { return frame }, n)
}

// NextCall is the Call-ID of a call f has not seen yet.
func (f *FastPath) NextCall() string {
	f.Calls++
	return CallID(f.Calls)
}

// OfferCalls is offer for n calls of their own: build makes each one's
// frame from a Call-ID f has not seen before.
func (f *FastPath) OfferCalls(t testing.TB, build func(callID string) []byte, n int) (passed int, reasons map[cac.Reason]int) {
	t.Helper()
	reasons = map[cac.Reason]int{}
	for i := 0; i < n; i++ {
		d, err := f.Decide(build(f.NextCall()))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if d.Rejected {
			reasons[d.Reason]++
		} else {
			passed++
		}
	}
	return passed, reasons
}

func (f *FastPath) MustAt(t testing.TB, now uint64) {
	t.Helper()
	if err := f.At(now); err != nil {
		t.Fatal(err)
	}
}

var (
	Padi = Frame(Ether{Broadcast: true}, PPPoE{Code: PADI})
	Icrq = V4udp(1701, L2TP{MsgType: ICRQ})
)

// LoadInputs are measurements of Pcpu percent with a load multiplier,
// written by a control plane whose heartbeat is the fast path's clock now:
// fresh, so that the on-stale rule plays no part.
func (f *FastPath) LoadInputs(pcpu float64, multiplier uint32) policy.Inputs {
	return policy.Inputs{
		HeartbeatNS: f.Now,
		LoadMilli:   policy.Milli(cpu.LoadCharge(pcpu, multiplier)),
		CPUMilli:    uint32(policy.Milli(pcpu)),
	}
}

func MustRate(t testing.TB, cps, burst float64) bucket.Limit {
	t.Helper()
	l, err := bucket.FromRate(cps, burst)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// InviteFrom is the INVITE of call callID from src.
func InviteFrom(src netip.Addr, callID string) []byte {
	return Frame(Ether{}, IPv4{Src: src}, UDP{Dst: 5060}, SIPRequest("INVITE", ToNoTag).With("Call-ID", callID))
}

// CallID names the n-th call of a test.
func CallID(n int) string { return fmt.Sprintf("call-%d@198.51.100.1", n) }

// Entries counts what a map holds.
func Entries(t *testing.T, m *ebpf.Map) int {
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

// WithCallID is s with its Call-ID header line replaced by line.
func WithCallID(s SIP, line string) SIP {
	s.Headers = append([]string(nil), s.Headers...)
	for i, h := range s.Headers {
		if strings.HasPrefix(h, "Call-ID:") {
			s.Headers[i] = line
		}
	}
	return s
}
