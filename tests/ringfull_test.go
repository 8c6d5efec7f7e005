package tests

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
	"github.com/xdpcac/xdpcac/cac/admission"
	. "github.com/xdpcac/xdpcac/tests/pkt"
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

// TestRejectRingFull: while nobody reads the reject ring buffer, finished
// seconds that do not fit are counted as lost, and nothing else changes:
// every verdict and counter still agrees with the model. Once the daemon
// reads again, records flow again.
func TestRejectRingFull(t *testing.T) {
	f := newFastPathWith(t, false, smallRing(bpf.XdpMapRejectEvents))
	var p admission.Policy
	p.Levels[cac.SIPInvite] = mustRate(t, 0.001, 1)
	f.setPolicy(t, p)
	rd, err := ringbuf.NewReader(f.objs.RejectEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	const sources = 200
	flood := func(at uint64, n int) {
		t.Helper()
		f.mustAt(t, at)
		for i := range n {
			src := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
			if err := f.check(inviteFrom(src, f.nextCall())); err != nil {
				t.Fatalf("source %v: %v", src, err)
			}
		}
	}
	flood(1*second, sources) // one admitted, 199 records opened
	flood(2*second, sources) // 199 finished seconds go out, 200 new ones
	lost := f.stats(t).RejectRecordsLost
	got := drain(t, rd)
	if lost == 0 || got == 0 || uint64(got)+lost != sources-1 {
		t.Fatalf("%d records out and %d lost; want some of each, %d in all", got, lost, sources-1)
	}
	st := f.stats(t)
	if inv := st.Classes[cac.SIPInvite]; inv.Admitted != 1 || inv.Rejected[cac.ReasonClass] != 2*sources-1 {
		t.Errorf("INVITE counters %+v: want 1 admitted, %d rejected by class", inv, 2*sources-1)
	}

	flood(3*second, 10) // the ring was read: ten finished seconds fit
	if got := drain(t, rd); got != 10 {
		t.Errorf("%d records after the ring was read, want 10", got)
	}
	if again := f.stats(t).RejectRecordsLost; again != lost {
		t.Errorf("lost went from %d to %d with room in the ring", lost, again)
	}
	t.Logf("page-sized ring: %d records out, %d lost", got, lost)
}

// TestSIPRingFull: out-service responses from an agent that find the SIP
// ring buffer full are counted as lost; the responses still pass.
func TestSIPRingFull(t *testing.T) {
	f := newFastPathWith(t, false, smallRing(bpf.XdpMapSipEvents))
	f.setPolicy(t, agentPolicy(t))
	f.setAgentAddrs(t, map[netip.Addr]int{agentAddr: 0})
	rd, err := ringbuf.NewReader(f.objs.SipEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	response := Frame(Ether{}, IPv4{Src: agentAddr}, UDP{Src: 5060, Dst: 5060},
		Raw("SIP/2.0 503 Service Unavailable\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n"))
	const sent = 10
	for range sent {
		d, err := f.decide(response)
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != cac.Pass {
			t.Fatalf("an agent's response was %v", d.Verdict)
		}
	}
	lost := f.stats(t).SIPEventsLost
	got := drain(t, rd)
	if lost == 0 || got == 0 || uint64(got)+lost != sent {
		t.Fatalf("%d events out and %d lost; want some of each, %d in all", got, lost, sent)
	}
	if err := f.check(response); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, rd); n != 1 {
		t.Errorf("%d events after the ring was read, want 1", n)
	}
	if again := f.stats(t).SIPEventsLost; again != lost {
		t.Errorf("lost went from %d to %d with room in the ring", lost, again)
	}
}
