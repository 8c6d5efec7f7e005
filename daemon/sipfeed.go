package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/xdpcac/xdpcac/loader"
	"github.com/xdpcac/xdpcac/maps"
)

// How long the feed waits after a ring error before it reads again,
// doubling up to the most: an error that repeats must not spin a CPU.
const (
	feedRetryFirst = 10 * time.Millisecond
	feedRetryMost  = 5 * time.Second
)

// sipFeed reads the SIP events the fast path hands up and gives each to
// the room it belongs to (docs/design.md, "The daemon's rooms"): the messages of
// dialogs that hold sessions to the session keeper, refused requests to
// the 503 answerer, agents' responses and INVITEs refused at egress to
// the agents monitor. It outlives reloads: the answerer and the monitor
// it hands to are swapped under it, and one of them failing, or none
// being configured, never stops the others' events.
type sipFeed struct {
	log      *slog.Logger
	room     *room
	sessions *sessionKeeper
	answers  *answerCounts // the daemon's: a refusal with no answerer is suppressed

	// mu is held while an event is handed on, so that a swap waits for
	// the event in hand before the old room is stopped.
	mu      sync.RWMutex
	answer  *answerer  // nil: none configured, or it failed
	monitor *sipAgents // nil likewise

	pinned *loader.Pinned
	rd     *ringbuf.Reader
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startFeed opens the shared ring of the state directory's attachments
// and reads it until ctx ends or stop.
func startFeed(ctx context.Context, stateDir string, log *slog.Logger, sessions *sessionKeeper, answers *answerCounts) (*sipFeed, error) {
	f := &sipFeed{log: log, room: newRoom("sip-events"), sessions: sessions, answers: answers}
	p, err := loader.OpenShared(stateDir)
	if err != nil {
		return nil, fmt.Errorf("SIP events: %w", err)
	}
	rd, err := ringbuf.NewReader(p.SipEvents)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("SIP events: %w", err)
	}
	f.pinned, f.rd = p, rd
	ctx, f.cancel = context.WithCancel(ctx)
	f.room.running()
	f.wg.Add(1)
	go f.run(ctx)
	return f, nil
}

// run reads events until the reader is closed or ctx ends; an error is
// logged once a run of them and waited out with a backoff.
func (f *sipFeed) run(ctx context.Context) {
	defer f.wg.Done()
	backoff := feedRetryFirst
	for {
		rec, err := f.rd.Read()
		if errors.Is(err, ringbuf.ErrClosed) || ctx.Err() != nil {
			return
		}
		if err != nil {
			if backoff == feedRetryFirst {
				f.log.Warn("read SIP events; reading again with a backoff", "err", err)
			}
			f.room.fail(fmt.Errorf("read SIP events: %w", err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, feedRetryMost)
			continue
		}
		if backoff != feedRetryFirst {
			backoff = feedRetryFirst
			f.room.running()
			f.log.Info("reading SIP events again")
		}
		ev, err := maps.DecodeSIPEvent(rec.RawSample)
		if err != nil {
			f.log.Warn("SIP event", "err", err)
			continue
		}
		f.hand(ev)
	}
}

// hand gives one event to its room.
func (f *sipFeed) hand(ev maps.SIPEvent) {
	if ev.Kind == maps.SIPSession {
		f.sessions.seen(ev)
		return
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	switch ev.Kind {
	case maps.SIPRejected:
		if f.answer != nil {
			f.answer.answer(f.log, ev)
		} else {
			f.answers.suppressed.Add(1) // refused before an apply turned answers off, or no answerer
		}
	case maps.SIPAgentResponse:
		if f.monitor != nil {
			f.monitor.agentResponse(ev)
		}
	case maps.SIPEgressRefused:
		if f.monitor != nil {
			f.monitor.egressRefused(ev)
		}
	}
}

// route sets the rooms events go to from now on; it returns once no
// event is in the hands of those before.
func (f *sipFeed) route(ans *answerer, mon *sipAgents) {
	f.mu.Lock()
	f.answer, f.monitor = ans, mon
	f.mu.Unlock()
}

// stop ends the reading and closes the ring.
func (f *sipFeed) stop() {
	if f == nil {
		return
	}
	f.cancel()
	f.rd.Close()
	f.wg.Wait()
	f.pinned.Close()
	f.room.off()
}
