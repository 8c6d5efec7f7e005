package fleet_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/cac/fleet"
)

// TestScriptMatchesTwin drives gcra.lua and its Go twin with the same wants,
// the twin at the script's own clock, and holds them to the same grants and
// the same TAT, to the microsecond.
func TestScriptMatchesTwin(t *testing.T) {
	sock := startRedis(t)
	raw := rawClient(t, sock)
	c := newClient(t, fleet.Options{Fleet: "twin", Addresses: []string{sock}})
	ctx := context.Background()
	l := fleet.Limit{Name: "cps", CPS: 50, Burst: 10}
	interval, tolerance, err := l.Micros()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var twin fleet.GCRA
	var granted, denied, returned int
	for i := range 150 {
		want, back := 1+r.Int64N(8), int64(0)
		if r.IntN(3) == 0 { // tokens that expired unspent go back first
			want, back = r.Int64N(3), 1+r.Int64N(6)
		}
		g, err := c.Renew(ctx, "box1", l, want, back)
		if err != nil {
			t.Fatal(err)
		}
		now := g.ServerTime.UnixMicro()
		b := twin.GiveBack(now, interval, back)
		k := twin.Grant(now, interval, tolerance, want)
		if g.Tokens != k || g.Returned != b {
			t.Fatalf("step %d, want %d back %d at %d µs: script granted %d and took back %d, twin %d and %d", i, want, back, now, g.Tokens, g.Returned, k, b)
		}
		returned += int(b)
		if tat := tatOf(t, raw, "twin", "cps"); tat != twin.TATMicros {
			t.Fatalf("step %d: script's TAT %d, twin's %d", i, tat, twin.TATMicros)
		}
		if g.Members != 1 {
			t.Fatalf("step %d: %d members, want 1", i, g.Members)
		}
		if k > 0 {
			granted++
		} else {
			denied++
		}
		time.Sleep(time.Duration(r.Int64N(30)) * time.Millisecond)
	}
	t.Logf("150 requests: %d granted some tokens, %d none, %d tokens given back; script and twin agreed on each", granted, denied, returned)
	if granted == 0 || denied == 0 || returned == 0 {
		t.Errorf("the sequence should both grant and deny: %d granted, %d denied", granted, denied)
	}
}

// TestBoxesShareOneLimit: ten boxes, each with its own connection, want more
// than the rate of one limit for two seconds; together they are granted at
// most rate × elapsed + burst on Redis's clock, and nearly that.
func TestBoxesShareOneLimit(t *testing.T) {
	sock := startRedis(t)
	ctx := context.Background()
	l := fleet.Limit{Name: "cps", CPS: 200, Burst: 20}
	const boxes = 10
	type result struct {
		tokens      int64
		first, last time.Time
		requests    int
	}
	results := make([]result, boxes)
	var wg sync.WaitGroup
	errs := make(chan error, boxes)
	end := time.Now().Add(2 * time.Second)
	for b := range boxes {
		c := newClient(t, fleet.Options{Fleet: "race", Addresses: []string{"unix:" + sock}})
		box := "box" + string(rune('a'+b))
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &results[b]
			for time.Now().Before(end) {
				g, err := c.Grant(ctx, box, l, 5)
				if err != nil {
					errs <- err
					return
				}
				res.requests++
				if g.Tokens == 0 {
					continue
				}
				res.tokens += g.Tokens
				if res.first.IsZero() || g.ServerTime.Before(res.first) {
					res.first = g.ServerTime
				}
				if g.ServerTime.After(res.last) {
					res.last = g.ServerTime
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var total int64
	var requests int
	var first, last time.Time
	for b, r := range results {
		if r.tokens == 0 {
			t.Errorf("box %d was granted nothing in %d requests", b, r.requests)
			continue
		}
		total += r.tokens
		requests += r.requests
		if first.IsZero() || r.first.Before(first) {
			first = r.first
		}
		if r.last.After(last) {
			last = r.last
		}
	}
	elapsed := last.Sub(first)
	bound := l.CPS*elapsed.Seconds() + l.Burst
	t.Logf("%d boxes, %d requests: granted %d tokens in %v of Redis's clock; bound rate × elapsed + burst = %.1f (%.1f%%)",
		boxes, requests, total, elapsed, bound, 100*float64(total)/bound)
	// One token of slack: the first grant's instant is where elapsed starts.
	if float64(total) > bound+1 {
		t.Errorf("granted %d, over the bound %.1f", total, bound)
	}
	if float64(total) < 0.9*bound {
		t.Errorf("granted %d, under 90%% of the bound %.1f though the boxes wanted more", total, bound)
	}
}

// TestScriptFlushed: after SCRIPT FLUSH the next grant finds NOSCRIPT, sends
// the script once in full (EVAL, which loads it) and goes on by SHA.
func TestScriptFlushed(t *testing.T) {
	sock := startRedis(t)
	raw := rawClient(t, sock)
	c := newClient(t, fleet.Options{Fleet: "flush", Addresses: []string{sock}})
	ctx := context.Background()
	l := fleet.Limit{Name: "cps", CPS: 1000, Burst: 1000}
	grant := func(step string) {
		t.Helper()
		g, err := c.Grant(ctx, "box1", l, 1)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if g.Tokens != 1 {
			t.Fatalf("%s: granted %d, want 1", step, g.Tokens)
		}
	}
	grant("first grant")
	grant("second grant")
	evals := info(t, raw, "commandstats", "cmdstat_eval.calls")
	shas := info(t, raw, "commandstats", "cmdstat_evalsha.calls")
	if err := raw.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n := info(t, raw, "memory", "number_of_cached_scripts"); n != 0 {
		t.Fatalf("after SCRIPT FLUSH %d scripts cached", n)
	}
	grant("grant after SCRIPT FLUSH")
	grant("grant after that")
	grant("and another")
	if n := info(t, raw, "memory", "number_of_cached_scripts"); n != 1 {
		t.Errorf("%d scripts cached, want the one reloaded", n)
	}
	if d := info(t, raw, "commandstats", "cmdstat_eval.calls") - evals; d != 1 {
		t.Errorf("%d EVALs after the flush, want the one that reloaded the script", d)
	}
	if d := info(t, raw, "commandstats", "cmdstat_evalsha.calls") - shas; d != 3 {
		t.Errorf("%d EVALSHAs after the flush, want 3 (one finding NOSCRIPT)", d)
	}
}

// TestMembers: each lease renews its box's membership; Members lists the
// fleet's boxes newest first, leaves out the stale ones, and the next grant
// prunes them.
func TestMembers(t *testing.T) {
	sock := startRedis(t)
	raw := rawClient(t, sock)
	ctx := context.Background()
	const staleness = time.Second // the grants and Members below take far less, however loaded the host
	// Both forms of a unix address.
	a := newClient(t, fleet.Options{Fleet: "acme", Addresses: []string{sock}, Staleness: staleness})
	b := newClient(t, fleet.Options{Fleet: "acme", Addresses: []string{"unix:" + sock}, Staleness: staleness})
	other := newClient(t, fleet.Options{Fleet: "other", Addresses: []string{sock}, Staleness: staleness})
	l := fleet.Limit{Name: "cps", CPS: 100, Burst: 100}

	ga, err := a.Grant(ctx, "a", l, 1)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	gb, err := b.Grant(ctx, "b", l, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Grant(ctx, "x", l, 1); err != nil {
		t.Fatal(err)
	}
	if ga.Members != 1 || gb.Members != 2 {
		t.Errorf("members seen by the grants: a %d, b %d; want 1, 2", ga.Members, gb.Members)
	}
	ms, err := a.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Box != "b" || ms[1].Box != "a" {
		t.Fatalf("Members = %+v, want b then a", ms)
	}
	if !ms[0].LastRenewal.Equal(gb.ServerTime) || !ms[1].LastRenewal.Equal(ga.ServerTime) {
		t.Errorf("renewals %v, %v; want the grants' server times %v, %v",
			ms[0].LastRenewal, ms[1].LastRenewal, gb.ServerTime, ga.ServerTime)
	}

	time.Sleep(staleness + 100*time.Millisecond)
	ms, err = b.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 0 {
		t.Errorf("after the staleness Members = %+v, want none", ms)
	}
	if n := raw.ZCard(ctx, "xdpcac:{acme}:members").Val(); n != 2 {
		t.Errorf("before a grant prunes, the set holds %d, want 2", n)
	}
	gc, err := a.Grant(ctx, "c", l, 1)
	if err != nil {
		t.Fatal(err)
	}
	if gc.Members != 1 {
		t.Errorf("grant after the staleness sees %d members, want 1", gc.Members)
	}
	if n := raw.ZCard(ctx, "xdpcac:{acme}:members").Val(); n != 1 {
		t.Errorf("after the grant the set holds %d, want 1: a and b pruned", n)
	}
	ms, err = a.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Box != "c" {
		t.Errorf("Members = %+v, want c", ms)
	}
	ms, err = other.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 0 {
		t.Errorf("fleet other: Members = %+v after its staleness, want none", ms)
	}
}

// TestKeysExpire: the TAT key outlives the TAT by about a second and the
// members set the staleness by as much, so that idle limits and fleets
// leave nothing behind; an absent key is a full bucket.
func TestKeysExpire(t *testing.T) {
	sock := startRedis(t)
	raw := rawClient(t, sock)
	ctx := context.Background()
	c := newClient(t, fleet.Options{Fleet: "idle", Addresses: []string{sock}, Staleness: 2 * time.Second})
	l := fleet.Limit{Name: "cps", CPS: 100, Burst: 50}
	began := time.Now()
	g, err := c.Grant(ctx, "box1", l, 50)
	if err != nil {
		t.Fatal(err)
	}
	if g.Tokens != 50 {
		t.Fatalf("a fresh limit granted %d, want its burst 50", g.Tokens)
	}
	// 50 tokens at 10 ms put the TAT 500 ms ahead: the key lives ~1.5 s,
	// less what has passed since the grant (at most since it was asked).
	tat := raw.PTTL(ctx, "xdpcac:{idle}:tat:cps").Val()
	members := raw.PTTL(ctx, "xdpcac:{idle}:members").Val()
	passed := time.Since(began) + 10*time.Millisecond // and PTTL's rounding
	if tat < 1500*time.Millisecond-passed || tat > 1500*time.Millisecond {
		t.Errorf("TAT key PTTL %v, %v after the grant was asked: want 1.5 s less that", tat, passed)
	}
	if members < 3000*time.Millisecond-passed || members > 3000*time.Millisecond {
		t.Errorf("members key PTTL %v, %v after the grant was asked: want 3 s less that", members, passed)
	}
}
