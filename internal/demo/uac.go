package demo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// callTimeout bounds one call, INVITE to the BYE's 200: a call the filter
// or the server dropped fails after it rather than after sipgo's 32 s.
const callTimeout = 8 * time.Second

// uac is the trusted peer: a PBX whose address is the account of the
// demo's configuration, placing calls at a steady rate, each INVITE, 200
// OK, ACK, a second of call and BYE.
type uac struct {
	*sipEnd
	dialogs *sipgo.DialogClientCache
	target  sip.Uri

	// life ends every call at once (stop); its cause makes sipgo give up
	// a call without sending CANCEL and waiting 32 s for the 487.
	life     context.Context
	kill     context.CancelCauseFunc
	calls    sync.WaitGroup
	placed   atomic.Uint64 // calls begun
	invites  atomic.Uint64 // INVITEs sent
	answered atomic.Uint64 // 200 OKs to them
	done     atomic.Uint64 // BYEs answered with 200: calls completed

	mu       sync.Mutex
	failures map[string]int // why calls failed
}

func startUAC(ns, addr, target string) (*uac, error) {
	host, port, err := sip.ParseAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("SIP address %s: %w", addr, err)
	}
	thost, tport, err := sip.ParseAddr(target)
	if err != nil {
		return nil, fmt.Errorf("SIP address %s: %w", target, err)
	}
	u := &uac{target: sip.Uri{User: "100", Host: thost, Port: tport}, failures: map[string]int{}}
	end, err := newSIPEnd(ns, addr, "pbx", func(ua *sipgo.UserAgent, _ *sipgo.Client) error {
		// A PBX that only calls out refuses what is sent to it.
		ua.TransactionLayer().OnRequest(func(req *sip.Request, tx *sip.ServerTx) {
			if !req.IsAck() {
				tx.Respond(sip.NewResponseFromRequest(req, sip.StatusMethodNotAllowed, "Method Not Allowed", nil))
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	u.sipEnd = end
	u.dialogs = sipgo.NewDialogClientCache(end.client, sip.ContactHeader{Address: sip.Uri{User: "pbx", Host: host, Port: port}})
	u.life, u.kill = context.WithCancelCause(context.Background())
	return u, nil
}

// place starts a call every 1/rate until ctx ends; the calls go on.
func (u *uac) place(ctx context.Context, rate int) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		u.calls.Add(1)
		u.placed.Add(1)
		go func() {
			defer u.calls.Done()
			if err := u.call(); err != nil {
				u.mu.Lock()
				u.failures[err.Error()]++
				u.mu.Unlock()
			}
		}()
	}
}

// call is one call; its error says why it failed.
func (u *uac) call() error {
	ctx, cancel := context.WithTimeoutCause(u.life, callTimeout, sipgo.WaitAnswerForceCancelErr)
	defer cancel()
	d, err := u.dialogs.Invite(ctx, u.target, nil)
	if err != nil {
		return fmt.Errorf("INVITE not sent: %v", err)
	}
	defer d.Close()
	u.invites.Add(1)
	if err := d.WaitAnswer(ctx, sipgo.AnswerOptions{}); err != nil {
		return failure("INVITE", err)
	}
	u.answered.Add(1)
	if err := d.Ack(ctx); err != nil {
		return fmt.Errorf("ACK not sent: %v", err)
	}
	select {
	case <-ctx.Done():
		return failure("call", ctx.Err())
	case <-time.After(time.Second):
	}
	if err := d.Bye(ctx); err != nil {
		return failure("BYE", err)
	}
	u.done.Add(1)
	return nil
}

// failure names what a request got instead of its 200: a response, or
// none.
func failure(what string, err error) error {
	var p *sipgo.ErrDialogResponse
	var v sipgo.ErrDialogResponse
	switch {
	case errors.As(err, &p):
		return fmt.Errorf("%s answered %d %s", what, p.Res.StatusCode, p.Res.Reason)
	case errors.As(err, &v):
		return fmt.Errorf("%s answered %d %s", what, v.Res.StatusCode, v.Res.Reason)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, sip.ErrTransactionTimeout):
		return fmt.Errorf("%s not answered", what)
	}
	return fmt.Errorf("%s: %v", what, err)
}

// finish waits up to wait for the calls under way to end, and then ends
// those still going.
func (u *uac) finish(wait time.Duration) {
	done := make(chan struct{})
	go func() { u.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		u.kill(sipgo.WaitAnswerForceCancelErr)
		<-done
	}
}

// stop ends every call at once and closes the socket.
func (u *uac) stop() {
	u.kill(sipgo.WaitAnswerForceCancelErr)
	u.calls.Wait()
	u.close()
}

// callCounts is what the trusted peer did, at one moment.
type callCounts struct{ invites, answered, done uint64 }

func (u *uac) counts() callCounts {
	return callCounts{u.invites.Load(), u.answered.Load(), u.done.Load()}
}

// why lists the failures, the most frequent first.
func (u *uac) why() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for r := range u.failures {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return u.failures[out[i]] > u.failures[out[j]] })
	for i, r := range out {
		out[i] = fmt.Sprintf("%d %s", u.failures[r], r)
	}
	return out
}
