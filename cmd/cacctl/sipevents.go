package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// readEvents follows the fast path's SIP events until ctx ends or the
// returned function is called.
func (a *sipAgents) readEvents(ctx context.Context) (func(), error) {
	rd, err := ringbuf.NewReader(a.pinned.SipEvents)
	if err != nil {
		return nil, fmt.Errorf("SIP events: %w", err)
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			rec, err := rd.Read()
			if errors.Is(err, ringbuf.ErrClosed) || ctx.Err() != nil {
				return
			}
			if err != nil {
				continue
			}
			ev, err := maps.DecodeSIPEvent(rec.RawSample)
			if err != nil {
				a.d.log.Warn("SIP event", "err", err)
				continue
			}
			switch ev.Kind {
			case maps.SIPAgentResponse:
				a.agentResponse(ev)
			case maps.SIPRejected:
				a.answers.answer(a.d, ev)
			}
		}
	}()
	return func() { rd.Close() }, nil
}

// agentResponse applies an agent's response with an out-service code to
// the targets at the address it came from. Only a response that parses,
// comes from an agent's destination, goes to the SIP interface of one of
// the agent's realms and answers an INVITE counts: a stranger's fake one,
// or one aimed anywhere else, changes nothing.
func (a *sipAgents) agentResponse(ev maps.SIPEvent) {
	a.events.Add(1)
	res, err := sipd.ResponseOf(ev.Message)
	if err != nil || int(ev.Agent) >= len(a.cfg.SessionAgents) {
		return
	}
	toRealm := false
	for _, name := range realmsOf(a.cfg.SessionAgents[ev.Agent]) {
		r := a.realms[name]
		toRealm = toRealm || netip.AddrPortFrom(r.Address, r.Port) == ev.Dst
	}
	if !toRealm {
		return
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, t := range a.targets {
		if a.index[k] == int(ev.Agent) && k.Destination.Addr() == ev.Src.Addr() &&
			t.DialogResponse(now, res.Code, res.CSeqMethod, capRetry(res.RetryAfter)) {
			a.changed(k, t)
		}
	}
}

// answerer answers refused SIP requests with 503, at most at its rate.
type answerer struct {
	retryAfter time.Duration
	netns      string
	limit      bucket.Limit

	mu    sync.Mutex
	b     bucket.Bucket
	conns map[netip.Addr]*net.UDPConn // by the address requests were sent to

	answered, dropped atomic.Uint64
}

func (d *daemon) newAnswerer(cfg *config.Config, _ *loader.Pinned) (*answerer, error) {
	l, err := bucket.FromRate(cfg.SIPReject.Rate, cfg.SIPReject.Rate)
	if err != nil {
		return nil, fmt.Errorf("sip-reject.rate: %w", err)
	}
	return &answerer{retryAfter: cfg.SIPReject.RetryAfter, netns: d.g.netns, limit: l, conns: map[netip.Addr]*net.UDPConn{}}, nil
}

// answer sends the 503 for one refused request, from the address it was
// sent to, or counts it dropped when over the rate or not answerable.
func (w *answerer) answer(d *daemon, ev maps.SIPEvent) {
	msg := sipd.HeadersOnly(ev.Message)
	w.mu.Lock()
	ok := w.b.Take(w.limit, control.MonotonicCoarse())
	w.mu.Unlock()
	if !ok {
		w.dropped.Add(1)
		return
	}
	resp, err := sipd.Reject503(msg, w.retryAfter)
	if err != nil {
		w.dropped.Add(1)
		return
	}
	// The port as the Via says (rport and all), but never another host
	// than the sender: received= is the sender's word, and a 503 must not
	// be aimed at a third party.
	to, err := sipd.ReplyAddr(msg, ev.Src)
	if err != nil {
		w.dropped.Add(1)
		return
	}
	to = netip.AddrPortFrom(ev.Src.Addr(), to.Port())
	conn, err := w.conn(ev.Dst.Addr())
	if err == nil {
		_, err = conn.WriteToUDPAddrPort(resp, to)
	}
	if err != nil {
		w.dropped.Add(1)
		d.log.Warn("answer a refused SIP request", "to", to.String(), "err", err)
		return
	}
	w.answered.Add(1)
}

// conn is a UDP socket on addr, in the interfaces' namespace: the 503
// comes from the address the caller sent to.
func (w *answerer) conn(addr netip.Addr) (*net.UDPConn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.conns[addr]; ok {
		return c, nil
	}
	var c *net.UDPConn
	err := loader.InNetns(w.netns, func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("socket on %v: %w", addr, err)
	}
	w.conns[addr] = c
	return c, nil
}

func (w *answerer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		c.Close()
	}
}
