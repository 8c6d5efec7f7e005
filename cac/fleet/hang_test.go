package fleet

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdpcac/xdpcac/tests/testenv"
)

// hungGranter is a Redis that takes every request and answers none until
// released or the request's deadline passes; entered says a request is in.
type hungGranter struct {
	entered chan struct{}
	release chan struct{}
	grant   Grant
}

func (g *hungGranter) Reachable() (bool, error) { return true, nil }

func (g *hungGranter) Renew(ctx context.Context, _ string, _ Limit, _, _ int64) (Grant, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return g.grant, nil
	case <-ctx.Done():
		return Grant{}, ctx.Err()
	}
}

// TestKeeperReadsWhileRedisHangs: while a renewal waits on a Redis that
// does not answer, the keeper's status and leases are read at once (show
// fleet, a scrape); before, the renewal held the lock the readers wanted.
func TestKeeperReadsWhileRedisHangs(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	g := &hungGranter{entered: make(chan struct{}, 1), release: make(chan struct{}), grant: Grant{Tokens: 5, Members: 1}}
	p := &onePool{}
	k := NewKeeper(KeeperConfig{Box: "a", Lifetime: time.Hour, Renew: time.Hour, LostAfter: time.Hour, OnLost: LostLocal}, g, p, t0)
	k.SetLimits([]Limit{{Name: "acme", CPS: 100, Burst: 100}}, []uint32{0})
	stepped := make(chan struct{})
	go func() {
		k.Step(context.Background(), t0.Add(time.Second))
		close(stepped)
	}()
	<-g.entered
	read := make(chan Status)
	go func() {
		var st Status
		k.Read(func(s Status, hs []*Holder) { st = s })
		read <- st
	}()
	select {
	case st := <-read:
		if st.State != StateFleet {
			t.Errorf("read during the hang: %+v", st)
		}
	case <-stepped:
		t.Fatal("the renewal ended before the read: it cannot have waited")
	case <-time.After(10 * time.Second):
		t.Fatal("the read waited on the hung renewal")
	}
	close(g.release)
	<-stepped
	if p.tokens != 5 {
		t.Errorf("after the answer the lease holds %d, want 5", p.tokens)
	}
}

// slowGranter answers after delay, as a Redis far away or busy does.
type slowGranter struct {
	delay time.Duration
	n     int64
}

func (g *slowGranter) Reachable() (bool, error) { return true, nil }

func (g *slowGranter) Renew(context.Context, string, Limit, int64, int64) (Grant, error) {
	time.Sleep(g.delay)
	return Grant{Tokens: g.n, Members: 1, RTT: g.delay}, nil
}

// TestGrantsStampedOnAnswer: a grant lives its lifetime from when its
// answer came, not from when the renewal began; an answer slower than the
// lifetime used to bring tokens that were expired on arrival.
func TestGrantsStampedOnAnswer(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	const delay, lifetime = 300 * time.Millisecond, 200 * time.Millisecond
	p := &onePool{}
	k := NewKeeper(KeeperConfig{Box: "a", Lifetime: lifetime, Renew: time.Second, LostAfter: time.Hour, OnLost: LostLocal},
		&slowGranter{delay: delay, n: 7}, p, t0)
	k.SetLimits([]Limit{{Name: "acme", CPS: 100, Burst: 100}}, []uint32{0})
	k.Step(context.Background(), t0)
	// Past now + lifetime, within the answer + lifetime: still held.
	k.Read(func(Status, []*Holder) {})
	k.mu.Lock()
	k.holders[0].Expire(p, t0.Add(lifetime+50*time.Millisecond))
	k.mu.Unlock()
	if p.tokens != 7 {
		t.Errorf("%v after a renewal whose answer took %v: the lease holds %d, want the 7 granted", lifetime+50*time.Millisecond, delay, p.tokens)
	}
	k.mu.Lock()
	k.holders[0].Expire(p, t0.Add(delay+lifetime+100*time.Millisecond))
	k.mu.Unlock()
	if p.tokens != 0 {
		t.Errorf("past the answer and its lifetime: %d tokens, want none", p.tokens)
	}
}

// TestClientTimeout: a Redis that takes the connection and never answers
// (SIGSTOPped) fails a request by its context's deadline; go-redis ignored
// a context's deadline and waited out its own timeouts before. Those are an
// hour here, so a request that ends at all ended by the context.
func TestClientTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	c, err := New(Options{Fleet: "east", Addresses: []string{l.Addr().String()}, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := c.Grant(ctx, "a", Limit{Name: "acme", CPS: 10, Burst: 10}, 1)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute): // a minute of the hour the client's own timeouts would take
		t.Fatal("the request waits on a hung Redis past its context's deadline")
	}
	t.Logf("a hung Redis failed the request after %v: %v", time.Since(start), err)
	if err == nil {
		t.Fatal("a Redis that never answers granted")
	}
}

// countingGranter fails every renewal while down, counts the renewals it
// was asked, and answers Reachable as up says.
type countingGranter struct {
	down, up bool
	asked    int
}

func (g *countingGranter) Reachable() (bool, error) { return g.up, nil }

func (g *countingGranter) Renew(context.Context, string, Limit, int64, int64) (Grant, error) {
	g.asked++
	if g.down {
		return Grant{}, context.DeadlineExceeded
	}
	return Grant{Tokens: 1, Members: 1}, nil
}

// TestUnreachableAskedNothing: once a renewal failed, the keeper asks
// Redis nothing until it answers again (Reachable): renewals that time
// out would pile up in a stopped Redis. Local grants go on meanwhile, and
// the first renewal after it answers goes at once.
func TestUnreachableAskedNothing(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	g := &countingGranter{down: true}
	p := &onePool{}
	k := NewKeeper(KeeperConfig{Box: "a", Lifetime: time.Second, Renew: 100 * time.Millisecond, LostAfter: time.Second,
		OnLost: LostLocal}, g, p, t0)
	k.SetLimits([]Limit{{Name: "acme", CPS: 100, Burst: 100}}, []uint32{0})
	at := t0
	for range 30 { // 3 s: the first renewal fails, then lost-after passes
		at = at.Add(100 * time.Millisecond)
		k.Step(context.Background(), at)
		p.call()
	}
	if g.asked != 1 {
		t.Errorf("Redis was asked %d renewals while unreachable, want only the first that failed", g.asked)
	}
	if st := k.Status(); st.State != StateLost || p.tokens+int64(k.Holders()[0].GrantedLocal) == 0 {
		t.Errorf("while unreachable: %s, %d granted locally; want lost, with local grants", st.State, k.Holders()[0].GrantedLocal)
	}
	g.down, g.up = false, true
	k.Step(context.Background(), at.Add(100*time.Millisecond))
	if g.asked != 2 || k.Status().State != StateFleet {
		t.Errorf("once Redis answers: asked %d, %s; want the next renewal asked and the fleet back", g.asked, k.Status().State)
	}
}

// TestProberWaitsOnOneConnection: Reachable is false while Redis takes
// the PING and answers nothing, on one connection however often it is
// asked, and true once Redis answers; it then says so once.
func TestProberWaitsOnOneConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	release := make(chan struct{})
	var conns atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go serveRESP(c, func(cmd string, w io.Writer) (bool, bool) {
				if cmd != "PING" {
					return false, false
				}
				<-release // stopped
				io.WriteString(w, "+PONG\r\n")
				return true, false
			})
		}
	}()
	c, err := New(Options{Fleet: "east", Addresses: []string{l.Addr().String()}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 10 {
		if ok, err := c.Reachable(); ok || err != nil {
			t.Fatalf("while the PING waits: reachable %v, %v; want false and no error", ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	if !testenv.Poll(5*time.Second, 10*time.Millisecond, func() bool { ok, _ := c.Reachable(); return ok }) {
		t.Fatal("not reachable once Redis answered")
	}
	if ok, _ := c.Reachable(); ok {
		t.Error("reachable twice for one answer")
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the prober dialled %d connections, want one", n)
	}
}
