package fastpath

import (
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	. "github.com/xdpcac/xdpcac/internal/pkt"
	"github.com/xdpcac/xdpcac/tests/harness"
)

// smallRing shrinks a ring buffer to one page, so that a test fills it
// with a few dozen records instead of thousands.
func smallRing(name string) func(*ebpf.CollectionSpec) {
	return func(s *ebpf.CollectionSpec) { s.Maps[name].MaxEntries = uint32(os.Getpagesize()) }
}

// drain reads what a ring buffer holds now and says how many records.
func drain(t *testing.T, rd *ringbuf.Reader) int {
	t.Helper()
	n := 0
	for {
		rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
}

// TestSIPRingFull: out-service responses from an agent that find the SIP
// ring buffer full are counted as lost; the responses still pass.
func TestSIPRingFull(t *testing.T) {
	f := harness.NewFastPathWith(t, false, smallRing(bpf.XdpMapSipEvents))
	f.SetPolicy(t, agentPolicy(t))
	f.SetAgentAddrs(t, map[netip.Addr]int{agentAddr: 0})
	rd := sipEvents(t, f)
	response := Frame(Ether{}, IPv4{Src: agentAddr}, UDP{Src: 5060, Dst: 5060},
		Raw("SIP/2.0 503 Service Unavailable\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"))
	const sent = 10
	for range sent {
		d, err := f.Decide(response)
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != cac.Pass {
			t.Fatalf("an agent's response was %v", d.Verdict)
		}
	}
	lost := f.Stats(t).SIPEventsLost
	got := drain(t, rd)
	if lost == 0 || got == 0 || uint64(got)+lost != sent {
		t.Fatalf("%d events out and %d lost; want some of each, %d in all", got, lost, sent)
	}
	if err := f.Check(response); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, rd); n != 1 {
		t.Errorf("%d events after the ring was read, want 1", n)
	}
	if again := f.Stats(t).SIPEventsLost; again != lost {
		t.Errorf("lost went from %d to %d with room in the ring", lost, again)
	}
}
