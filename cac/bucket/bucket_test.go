package bucket

import (
	"testing"
	"time"
)

// TestFlySIPSeed is the worked example of the FlySIP CPS page: limit 1 cps,
// so the bucket holds 60 calls. The first burst starts at t=0 and each
// later batch ends at the end of its span, as the example counts refill.
func TestFlySIPSeed(t *testing.T) {
	l, err := FromRate(1, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range SeedVector() {
		var b Bucket
		for i, batch := range c {
			passed := 0
			for _, now := range batch.Times {
				if b.Take(l, now) {
					passed++
				}
			}
			if passed != batch.Pass {
				t.Errorf("batch %d: %d of %d passed, want %d", i, passed, len(batch.Times), batch.Pass)
			}
		}
	}
}

func TestFromRate(t *testing.T) {
	l, err := FromRate(0.5, 30)
	if err != nil || l.IntervalNS != 2e9 || l.ToleranceNS != 58e9 {
		t.Errorf("0.5 cps, 30 calls: %+v, %v", l, err)
	}
	for _, bad := range [][2]float64{{0, 1}, {-1, 5}, {1, 0.5}, {1e-9, 1}} {
		if _, err := FromRate(bad[0], bad[1]); err == nil {
			t.Errorf("FromRate(%g, %g) accepted", bad[0], bad[1])
		}
	}
}

func TestRejectedTakesNothing(t *testing.T) {
	l, _ := FromRate(1, 1)
	var b Bucket
	if !b.Take(l, 0) || b.Take(l, 0) {
		t.Fatal("a one-call bucket should pass one call at t=0, not two")
	}
	tat := b.TATNS
	b.Take(l, 1)
	if b.TATNS != tat {
		t.Error("a rejected call moved the bucket")
	}
	if !b.Take(l, uint64(time.Second)) {
		t.Error("after one interval one call passes again")
	}
}

// TestShrunkBucketRefillsAtNewRate: after new limits, a drained bucket
// refills at its new rate instead of serving out the old backlog.
func TestShrunkBucketRefillsAtNewRate(t *testing.T) {
	slow, _ := FromRate(1, 60)
	fast, _ := FromRate(1000, 10)
	var b Bucket
	for i := 0; i < 60; i++ {
		b.Take(slow, 0)
	}
	if b.Take(slow, 0) {
		t.Fatal("the slow bucket should be dry")
	}
	if b.Take(fast, uint64(2*time.Millisecond)) {
		t.Error("right after the change the bucket is still empty")
	}
	if !b.Take(fast, uint64(3*time.Millisecond)) {
		t.Error("one interval (1 ms) after raising the rate to 1000 cps a call should pass")
	}
}

// TestTokens: a bucket of 5 calls at 1 call/s, full, after two calls, and
// refilling half a call later.
func TestTokens(t *testing.T) {
	l, err := FromRate(1, 5)
	if err != nil {
		t.Fatal(err)
	}
	var b Bucket
	const s = uint64(1e9)
	now := 100 * s
	if tok, burst := b.Tokens(l, now); tok != 5 || burst != 5 {
		t.Fatalf("full: %v of %v", tok, burst)
	}
	b.Take(l, now)
	b.Take(l, now)
	if tok, _ := b.Tokens(l, now); tok != 3 {
		t.Fatalf("after two calls: %v, want 3", tok)
	}
	if tok, _ := b.Tokens(l, now+s/2); tok != 3.5 {
		t.Fatalf("half a second later: %v, want 3.5", tok)
	}
	for b.Take(l, now) {
	}
	if tok, _ := b.Tokens(l, now); tok >= 1 {
		t.Fatalf("empty: %v calls left", tok)
	}
}
