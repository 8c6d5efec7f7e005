package maps

import (
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/bpf"
	"github.com/xdpcac/xdpcac/cac"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/policy"
	"github.com/xdpcac/xdpcac/tests/testenv"
)

// fakeClock stands still but for what a writer sleeps, and says how long
// each sleep was.
type fakeClock struct {
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(d time.Duration) {
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
}

// TestSettleWaitsWhatRemains: a writer waits all of Settle before its
// first write, what remains of it since its last switch after that, and
// nothing once it has passed.
func TestSettleWaitsWhatRemains(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	w := &PolicyWriter{now: c.now, sleep: c.sleep}
	w.settle()
	w.last = c.t
	c.t = c.t.Add(30 * time.Millisecond)
	w.settle()
	w.last = c.t
	c.t = c.t.Add(Settle)
	w.settle()
	if len(c.slept) != 2 || c.slept[0] != Settle || c.slept[1] != Settle-30*time.Millisecond {
		t.Errorf("slept %v; want %v, then %v, then nothing", c.slept, Settle, Settle-30*time.Millisecond)
	}
}

// TestPolicyWritesSettleApart: back-to-back writes of one writer switch
// the policy slot at least Settle apart. The switches are read from the
// policy_slot map each time the writer reads its clock.
func TestPolicyWritesSettleApart(t *testing.T) {
	testenv.RequireBPF(t)
	var objs bpf.XdpObjects
	if err := bpf.LoadXdpObjects(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	pm := PolicyMapsOf(&objs.XdpMaps)

	c := &fakeClock{t: time.Unix(1000, 0)}
	type change struct {
		at   time.Time
		slot uint32
	}
	var word uint32
	if err := pm.Slot.Lookup(uint32(0), &word); err != nil {
		t.Fatal(err)
	}
	switches := []change{}
	w := NewPolicyWriter(pm)
	w.sleep = c.sleep
	w.now = func() time.Time {
		var now uint32
		if err := pm.Slot.Lookup(uint32(0), &now); err != nil {
			t.Fatal(err)
		}
		if wordSlot(now) != wordSlot(word) {
			switches = append(switches, change{c.t, wordSlot(now)})
		}
		word = now
		return c.now()
	}

	var p policy.Policy
	p.Levels[cac.SIPInvite] = bucket.Unlimited
	const writes = 4
	for range writes {
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if len(switches) != writes {
		t.Fatalf("%d switches seen, want %d: %v", len(switches), writes, switches)
	}
	for i := 1; i < len(switches); i++ {
		if d := switches[i].at.Sub(switches[i-1].at); d < Settle || switches[i].slot == switches[i-1].slot {
			t.Errorf("switch %d to slot %d came %v after the one to slot %d; want at least %v, to the other slot",
				i, switches[i].slot, d, switches[i-1].slot, Settle)
		}
	}
	if len(c.slept) == 0 || c.slept[0] != Settle {
		t.Errorf("slept %v, the first write all of Settle (%v): it cannot know the last switch", c.slept, Settle)
	}
}
