package demo

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/emiago/sipgo"
)

// The capacity step (docs/design.md, "Capacity"): the trusted peer calls
// the conference bridge's number, an account of demoConfig by the called
// number with max-sessions capacitySessions. It places capacityCalls at
// once, each held capacityHold: that many are answered, the rest are
// refused (dropped: the class does not answer refusals); once those
// calls hang up, one more passes.
const (
	bridgeNumber     = "800"
	capacitySessions = 3
	capacityCalls    = 6
	capacityHold     = 2 * time.Second
	// capacityWait is how long a call waits for its answer: one the
	// filter refused is never answered.
	capacityWait = 2 * time.Second
)

// capacityResult is what the calls to the bridge got.
type capacityResult struct {
	answered, refused int
	after             bool // the call placed once the first ones hung up was answered
	err               error
}

// callBridge is one call to the bridge, held for hold; it reports whether
// it was answered.
func (u *uac) callBridge(ctx context.Context, hold time.Duration) (bool, error) {
	target := u.target
	target.User = bridgeNumber
	wait, cancel := context.WithTimeoutCause(ctx, capacityWait, sipgo.WaitAnswerForceCancelErr)
	defer cancel()
	d, err := u.dialogs.Invite(wait, target, nil)
	if err != nil {
		return false, fmt.Errorf("INVITE not sent: %w", err)
	}
	defer d.Close()
	if err := d.WaitAnswer(wait, sipgo.AnswerOptions{}); err != nil {
		return false, nil // refused: never answered
	}
	call, cancel := context.WithTimeout(ctx, hold+callTimeout)
	defer cancel()
	if err := d.Ack(call); err != nil {
		return true, fmt.Errorf("ACK not sent: %w", err)
	}
	time.Sleep(hold)
	if err := d.Bye(call); err != nil {
		return true, failure("BYE", err)
	}
	return true, nil
}

// callCapacity places the calls to the bridge at once, then one more after
// they end.
func callCapacity(ctx context.Context, u *uac) capacityResult {
	var r capacityResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < capacityCalls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := u.callBridge(ctx, capacityHold)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.err = err
			}
			if ok {
				r.answered++
			} else {
				r.refused++
			}
		}()
	}
	wg.Wait()
	// The BYEs went up through the ring; the daemon gives their sessions
	// back at once.
	time.Sleep(100 * time.Millisecond)
	ok, err := u.callBridge(ctx, 0)
	r.after = ok
	if err != nil && r.err == nil {
		r.err = err
	}
	return r
}

// writeCapacity prints what the calls to the bridge got, and returns what
// capacity should have done and did not.
func writeCapacity(w io.Writer, r capacityResult) []string {
	if r.err != nil {
		return []string{fmt.Sprintf("capacity: the calls to the bridge: %v", r.err)}
	}
	after := "was answered"
	if !r.after {
		after = "was NOT answered"
	}
	fmt.Fprintf(w, "capacity: the peer placed %d calls at once to the bridge (max-sessions %d): %d answered, %d refused for capacity; once they hung up, the next call %s\n",
		capacityCalls, capacitySessions, r.answered, r.refused, after)
	if r.answered != capacitySessions || r.refused != capacityCalls-capacitySessions || !r.after {
		return []string{fmt.Sprintf("capacity: %d answered and %d refused of %d calls at once, the next one answered %v: want %d, %d and true",
			r.answered, r.refused, capacityCalls, r.after, capacitySessions, capacityCalls-capacitySessions)}
	}
	return nil
}
