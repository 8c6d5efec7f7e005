package testenv

import (
	"testing"
	"time"
)

// Poll calls cond every interval until it holds or timeout has passed,
// and says whether it held.
func Poll(timeout, interval time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(interval) {
		if cond() {
			return true
		}
	}
	return false
}

// WaitFor polls cond every 20 ms and fails t if it does not hold within
// 5 s.
func WaitFor(t testing.TB, cond func() bool) {
	t.Helper()
	if !Poll(5*time.Second, 20*time.Millisecond, cond) {
		t.Fatal("condition not met within 5s")
	}
}
