package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdpcac/xdpcac/cac/bucket"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/cac/control"
	"github.com/xdpcac/xdpcac/cac/sipd"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// agentResponse applies an agent's response with an out-service code to
// the targets at the address it came from. Only a response that parses,
// comes from an agent's destination, goes to the SIP interface of one of
// the agent's realms and answers an INVITE counts: a stranger's fake one,
// or one aimed anywhere else, changes nothing. And only one that answers
// a transaction the SIP server sent toward the agent, as the egress
// program saw it go out (docs/design.md, "Egress admission"): a 503
// forged from the agent's address, with the right Call-ID but no request
// behind it, is counted and changes nothing either.
func (a *sipAgents) agentResponse(ev maps.SIPEvent) {
	a.events.Add(1)
	res, err := sipd.ResponseOf(ev.Message)
	if err != nil || int(ev.Agent) >= len(a.cfg.SessionAgents) {
		return
	}
	if res.CSeqMethod == "INVITE" && !ev.Sent {
		a.forged.Add(1)
		a.log.Info("session agent response answers no INVITE the server sent; ignored",
			"agent", a.cfg.SessionAgents[ev.Agent].Name, "from", ev.Src.String(), "code", res.Code)
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
	for k, t := range a.targets {
		if a.index[k] == int(ev.Agent) && k.Destination.Addr() == ev.Src.Addr() &&
			t.DialogResponse(now, res.Code, res.CSeqMethod, capRetry(res.RetryAfter)) {
			a.changed(k, t)
		}
	}
	a.mu.Unlock()
	a.writeStates() // at once: the next INVITE toward it fails fast
}

// answerCounts are the refused SIP requests answered with 503, and those
// suppressed: over the answerer's rate, not answerable, or unsent.
type answerCounts struct {
	answered, suppressed atomic.Uint64
}

// answerer answers refused SIP requests with 503, at most at its rate.
type answerer struct {
	retryAfter time.Duration
	limit      bucket.Limit
	counts     *answerCounts

	mu  sync.Mutex
	b   bucket.Bucket
	raw *sipd.RawUDP // in the interfaces' namespace
	// wire sends an answer out of the interface its request came in on.
	wire *sipd.Wire
}

func (d *Daemon) newAnswerer(cfg *config.Config) (*answerer, error) {
	l, err := bucket.FromRate(cfg.SIPReject.Rate, cfg.SIPReject.Rate)
	if err != nil {
		return nil, fmt.Errorf("sip-reject.rate: %w", err)
	}
	raw, err := d.openRaw()
	if err != nil {
		return nil, fmt.Errorf("answer refused SIP requests (action: reject): %w", err)
	}
	wire, err := d.openWire()
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("answer refused SIP requests (action: reject): %w", err)
	}
	return &answerer{retryAfter: cfg.SIPReject.RetryAfter, limit: l, counts: &d.answers, raw: raw, wire: wire}, nil
}

// answer sends the 503 for one refused request, from the address and port
// it was sent to, or counts it suppressed when over the rate or not
// answerable.
func (w *answerer) answer(log *slog.Logger, ev maps.SIPEvent) {
	msg := sipd.HeadersOnly(ev.Message)
	w.mu.Lock()
	ok := w.b.Take(w.limit, control.MonotonicCoarse())
	w.mu.Unlock()
	if !ok {
		w.counts.suppressed.Add(1)
		return
	}
	// Garbage gets no answer, and no log line either: a flood of it
	// would write one a request.
	if err := sendAnswer(w.raw, w.wire, w.counts, ev, msg, 503, w.retryAfter, ""); errors.Is(err, errUnsent) {
		log.Warn("answer a refused SIP request", "err", err)
	}
}

// errUnsent marks an answer built but not sent.
var errUnsent = errors.New("not sent")

// sendAnswer answers the request msg of ev with code (Retry-After
// retryAfter, and a Warning of why when not empty): from the address and
// port it was sent to, to its sender at the port its Via names (rport and
// all), but never another host than the sender: received= is the
// sender's word, and an answer must not be aimed at a third party. With
// wire, and an event that says where the request came in, the answer
// leaves by that interface to the MAC it came from (docs/design.md,
// "Answers"); else it is routed. It counts the answer as answered or
// suppressed.
func sendAnswer(raw *sipd.RawUDP, wire *sipd.Wire, counts *answerCounts, ev maps.SIPEvent, msg []byte, code int, retryAfter time.Duration, why string) error {
	resp, err := sipd.Reject(msg, code, retryAfter, why)
	if err != nil {
		counts.suppressed.Add(1)
		return err
	}
	to, err := sipd.ReplyAddr(msg, ev.Src)
	if err != nil {
		counts.suppressed.Add(1)
		return err
	}
	to = netip.AddrPortFrom(ev.Src.Addr(), to.Port())
	send := func() error { return raw.Send(ev.Dst, to, resp) }
	if wire != nil && ev.Ifindex != 0 {
		// Out of the interface the request came in on, to the MAC it
		// came from; a request whose frame the event could not carry is
		// answered as routed.
		send = func() error { return wire.SendReply(ev.Ifindex, ev.L2, ev.Dst, to, resp) }
	}
	if err := send(); err != nil {
		counts.suppressed.Add(1)
		return fmt.Errorf("%w: from %s to %s: %w", errUnsent, ev.Dst, to, err)
	}
	counts.answered.Add(1)
	return nil
}

// openRaw opens the raw socket answers go from, in the interfaces'
// namespace: an answer goes from the port a request was sent to, which
// the SIP server (or, at egress, the agent) holds, and a raw socket is the
// only way to send from it.
func (d *Daemon) openRaw() (*sipd.RawUDP, error) {
	var raw *sipd.RawUDP
	err := loader.InNetns(d.cfg.Netns, func() error {
		var err error
		raw, err = sipd.OpenRawUDP()
		return err
	})
	return raw, err
}

// openWire opens the packet socket answers leave their request's wire
// by, in the interfaces' namespace, whose interface indexes it names.
func (d *Daemon) openWire() (*sipd.Wire, error) {
	var w *sipd.Wire
	err := loader.InNetns(d.cfg.Netns, func() error {
		var err error
		w, err = sipd.OpenWire()
		return err
	})
	return w, err
}

func (w *answerer) close() {
	w.raw.Close()
	w.wire.Close()
}
