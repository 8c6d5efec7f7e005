package fleet

import (
	"context"
	"net"
	"testing"
	"time"
)

// hungGranter is a Redis that takes every request and answers none until
// released or the request's deadline passes; entered says a request is in.
type hungGranter struct {
	entered chan struct{}
	release chan struct{}
	grant   Grant
}

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
// (SIGSTOPped) fails a request by its deadline; go-redis ignored a
// context's deadline and waited out its own seconds before.
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
	c, err := New(Options{Fleet: "east", Addresses: []string{l.Addr().String()}, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Grant(ctx, "a", Limit{Name: "acme", CPS: 10, Burst: 10}, 1)
	took := time.Since(start)
	t.Logf("a hung Redis failed the request after %v: %v", took, err)
	if err == nil {
		t.Fatal("a Redis that never answers granted")
	}
	if took > 2*time.Second {
		t.Errorf("the request waited %v on a hung Redis, past its 100ms deadline", took)
	}
}
