package integration

import (
	"testing"
	"time"
)

// Waiting on state: a test that needs something to have happened re-checks
// the state that shows it (a row, a status, a log line) on a ticker until it
// holds or a deadline passes. A deadline only bounds a wait for something
// that must happen; it is never how long a test expects something to take.

// pollEvery is how often poll and until re-check their condition: most
// conditions are a query or a request, and many tests wait at once.
const pollEvery = 50 * time.Millisecond

// until checks cond every pollEvery until it holds, and reports whether it
// did before timeout (cond is checked once more at the deadline).
func until(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
}

// poll checks cond until it holds, failing the test with what cond last
// said after timeout.
func poll(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var state string
	if !until(timeout, func() (ok bool) { ok, state = cond(); return ok }) {
		t.Fatalf("timed out after %s: %s", timeout, state)
	}
}
