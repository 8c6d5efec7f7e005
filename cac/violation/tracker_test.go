package violation

import (
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac"
)

// feed observes one attachment, eth1, each second from t0 for len(per)
// seconds, with per[i] PADIs offered in second i of which rej[i] are
// refused by source; it returns the time of the last reading.
func feed(tr *Tracker, t0 time.Time, c *Counts, per, rej []uint64) time.Time {
	at := t0
	for i := range per {
		at = at.Add(time.Second)
		c[cac.PPPoEPADI].Admitted += per[i] - rej[i]
		c[cac.PPPoEPADI].Rejected[cac.ReasonSource] += rej[i]
		tr.Observe(at, map[string]Counts{"eth1": *c})
	}
	return at
}

func repeat(n int, v uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestViolationLife: a level refusing is in violation from the start of
// the second of its first refusal; rates are per second over the
// readings, with peaks and averages over one and five minutes; Hold
// seconds without a refusal end it, and it is listed as ended until
// Window has passed since its last refusal.
func TestViolationLife(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	tr := New()
	var c Counts
	tr.Observe(t0, map[string]Counts{"eth1": c}) // the base
	// 10 quiet seconds of 100/s, then 20 s of 800/s of which 600 refused.
	at := feed(tr, t0, &c, repeat(10, 100), repeat(10, 0))
	if v := tr.View(at); len(v) != 0 {
		t.Fatalf("nothing refused, yet %+v", v)
	}
	start := at
	at = feed(tr, at, &c, repeat(20, 800), repeat(20, 600))
	v := tr.View(at)
	if len(v) != 1 {
		t.Fatalf("one level in violation, got %+v", v)
	}
	got := v[0]
	if got.Class != "pppoe-padi" || got.Level != "source" || !got.InViolation || !got.Since.Equal(start) || got.Ended != nil ||
		got.Rejected != 20*600 || got.Episodes != 1 {
		t.Errorf("in violation: %+v, want since %v, 12000 refused", got, start)
	}
	if got.Arrival.Now != 800 || got.Arrival.Peak1m != 800 || got.Refused.Now != 600 {
		t.Errorf("rates: arrival %+v, refused %+v", got.Arrival, got.Refused)
	}
	// Over the last minute: 30 readings, 10 of 100 and 20 of 800.
	if want := (10*100 + 20*800) / 30.0; got.Arrival.Avg1m != want {
		t.Errorf("arrival average over a minute %v, want %v", got.Arrival.Avg1m, want)
	}

	// Two quiet seconds keep it (under Hold), the third ends it.
	at = feed(tr, at, &c, repeat(2, 50), repeat(2, 0))
	if v := tr.View(at); len(v) != 1 || !v[0].InViolation || v[0].Refused.Now != 0 {
		t.Errorf("after 2 s without a refusal: %+v, want still in violation", v)
	}
	last := at.Add(-2 * time.Second)
	at = feed(tr, at, &c, repeat(1, 50), repeat(1, 0))
	v = tr.View(at)
	if len(v) != 1 || v[0].InViolation || v[0].Ended == nil || !v[0].Ended.Equal(last) || v[0].Arrival.Peak1m != 800 {
		t.Fatalf("after Hold without a refusal: %+v, want ended at %v", v, last)
	}
	// A minute later the peak of the last minute has gone, the five
	// minutes' stays; past Window since its last refusal it is gone.
	at = feed(tr, at, &c, repeat(70, 50), repeat(70, 0))
	if v := tr.View(at); len(v) != 1 || v[0].Arrival.Peak1m != 50 || v[0].Arrival.Peak5m != 800 {
		t.Errorf("70 s later: %+v, want peaks 50 over 1m and 800 over 5m", v)
	}
	at = feed(tr, at, &c, repeat(240, 50), repeat(240, 0))
	if v := tr.View(at); len(v) != 0 {
		t.Errorf("past Window: %+v, want nothing", v)
	}
	// A new violation is the second episode.
	at = feed(tr, at, &c, repeat(1, 70), repeat(1, 10))
	if v := tr.View(at); len(v) != 1 || v[0].Episodes != 2 || v[0].Rejected != 10 {
		t.Errorf("again: %+v, want the second episode with 10 refused", v)
	}
}

// TestViolationRates: a reading that comes late is rated over the time
// it covers; attachments are summed, one made anew (its counters lower)
// starts from its new base, and a clock that goes back rates nothing.
func TestViolationRates(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	tr := New()
	var a, b Counts
	tr.Observe(t0, map[string]Counts{"eth1": a, "eth2": b})
	a[cac.SIPInvite].Rejected[cac.ReasonClass] = 300
	b[cac.SIPInvite].Rejected[cac.ReasonClass] = 100
	at := t0.Add(2 * time.Second) // a late tick
	tr.Observe(at, map[string]Counts{"eth1": a, "eth2": b})
	v := tr.View(at)
	if len(v) != 1 || v[0].Refused.Now != 200 || v[0].Arrival.Now != 200 || v[0].Rejected != 400 {
		t.Fatalf("400 over 2 s on two attachments: %+v, want 200/s", v)
	}
	// eth2 made anew counts from 5; eth1 goes on: only eth1's 100 count.
	a[cac.SIPInvite].Rejected[cac.ReasonClass] += 100
	var fresh Counts
	fresh[cac.SIPInvite].Rejected[cac.ReasonClass] = 5
	at = at.Add(time.Second)
	tr.Observe(at, map[string]Counts{"eth1": a, "eth2": fresh})
	if v := tr.View(at); v[0].Refused.Now != 100 {
		t.Errorf("with eth2 made anew: %v/s, want 100", v[0].Refused.Now)
	}
	tr.Observe(at.Add(-time.Second), map[string]Counts{"eth1": a, "eth2": fresh})
	if v := tr.View(at); v[0].Refused.Now != 100 || v[0].Rejected != 500 {
		t.Errorf("after a reading from the past: %+v", v[0])
	}
}

// TestViolationOrder: those in violation come first, the oldest first,
// then those that ended, the latest first.
func TestViolationOrder(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	tr := New()
	var c Counts
	tr.Observe(t0, map[string]Counts{"eth1": c})
	step := func(at time.Time, f func()) {
		f()
		tr.Observe(at, map[string]Counts{"eth1": c})
	}
	step(t0.Add(1*time.Second), func() { c[cac.L2TPICRQ].Rejected[cac.ReasonEnvironment]++ })
	step(t0.Add(2*time.Second), func() { c[cac.SIPInvite].Rejected[cac.ReasonCPULimit]++ })
	step(t0.Add(3*time.Second), func() { c[cac.PPPoEPADR].Rejected[cac.ReasonSource]++; c[cac.SIPInvite].Rejected[cac.ReasonCPULimit]++ })
	for i := 4; i <= 6; i++ {
		step(t0.Add(time.Duration(i)*time.Second), func() { c[cac.SIPInvite].Rejected[cac.ReasonCPULimit]++ })
	}
	var got []string
	for _, v := range tr.View(t0.Add(6 * time.Second)) {
		got = append(got, v.Class+"/"+v.Level)
	}
	want := []string{"sip-invite/cpu-limit", "pppoe-padr/source", "l2tp-icrq/environment"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("order %v, want %v", got, want)
	}
}
