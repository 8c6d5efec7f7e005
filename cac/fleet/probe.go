package fleet

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// prober finds out when an unreachable Redis answers again without
// piling requests up in it. A renewal that times out drops its connection,
// and each renewal after it dialled a new one, its script queued in a
// Redis that was stopped: after a 20 s hang Redis ran some 200 of them a
// box before the first renewal that counted, 0.1 to 0.6 s. While the
// keeper holds Redis unreachable it asks no renewal; the prober waits on
// one connection with no read deadline for a PING, and the first answer
// lets the next renewal go.
type prober struct {
	dial  func() redis.UniversalClient // a client of one connection, no read or write deadline
	rdb   redis.UniversalClient
	retry time.Duration   // between PINGs that fail at once (refused)
	ctx   context.Context // ends with the Client
	stop  context.CancelFunc

	mu      sync.Mutex
	running bool
	up      bool
	err     error // why the last PING failed; nil while one waits
}

func newProber(o Options, retry time.Duration) *prober {
	ctx, stop := context.WithCancel(context.Background())
	dial := func() redis.UniversalClient {
		if path, ok := unixPath(o.Addresses[0]); ok && len(o.Addresses) == 1 && o.MasterName == "" {
			return redis.NewClient(&redis.Options{Network: "unix", Addr: path, Username: o.Username, Password: o.Password,
				DB: o.DB, TLSConfig: o.TLS, MaxRetries: -1, ContextTimeoutEnabled: true,
				DialTimeout: o.Timeout, ReadTimeout: -1, WriteTimeout: -1, PoolSize: 1})
		}
		return redis.NewUniversalClient(&redis.UniversalOptions{
			Addrs: o.Addresses, MasterName: o.MasterName, Username: o.Username, Password: o.Password,
			SentinelUsername: o.SentinelUsername, SentinelPassword: o.SentinelPassword, DB: o.DB, TLSConfig: o.TLS,
			MaxRetries: -1, MaxRedirects: -1, ContextTimeoutEnabled: true,
			DialTimeout: o.Timeout, ReadTimeout: -1, WriteTimeout: -1, PoolSize: 1,
		})
	}
	return &prober{dial: dial, rdb: dial(), retry: retry, ctx: ctx, stop: stop}
}

// reachable reports whether Redis answered a PING since the last time it
// said so, and else why the last PING failed (nil while one waits); false
// starts the PING when none is under way.
func (p *prober) reachable() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.up {
		p.up, p.err = false, nil // one answer lets one renewal go
		return true, nil
	}
	if !p.running {
		p.running = true
		go p.run()
	}
	return false, p.err
}

// run PINGs until Redis answers or the Client closes. A PING that fails
// at once (refused, a TLS error) is tried again on a client made afresh:
// go-redis's pool, after as many failed dials as its size, dials only
// once a second, which held the fleet back up to a second after Redis
// returned.
func (p *prober) run() {
	for {
		p.mu.Lock()
		rdb := p.rdb
		p.mu.Unlock()
		err := rdb.Ping(p.ctx).Err()
		if p.ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		if err == nil {
			p.up, p.running = true, false
			p.mu.Unlock()
			return
		}
		p.err = err // a refusal says why Redis is unreachable
		p.rdb = p.dial()
		p.mu.Unlock()
		rdb.Close()
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(p.retry):
		}
	}
}

func (p *prober) close() error {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rdb.Close()
}
