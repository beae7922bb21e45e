// Package clock provides the time source used wherever time matters (key expiry,
// OTP lifetime, daily windows), so tests can move time instead of sleeping.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the current time.
type Clock interface {
	// Now returns the current time in UTC.
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now in UTC.
func (Real) Now() time.Time { return time.Now().UTC() }

// Fake is a manually driven clock for tests. The zero value starts at the Unix
// epoch; use NewFake to start elsewhere. It is safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a Fake clock set to t: a test's value, set to a time, not
// a component with dependencies, hence no Config and no error.
func NewFake(t time.Time) *Fake { return &Fake{now: t.UTC()} }

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Set moves the clock to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t.UTC()
}

// Advance moves the clock forward by d and returns the new time.
func (f *Fake) Advance(d time.Duration) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	return f.now
}

// Stamp returns t in UTC truncated to whole seconds, the form every
// timestamp is stored in resources and rendered in ("2026-11-22T14:03:05Z").
func Stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// StampPtr is Stamp for an optional time: nil stays nil.
func StampPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := Stamp(*t)
	return &v
}

// Format renders t as resources do: Stamp in RFC 3339,
// "2026-11-22T14:03:05Z".
func Format(t time.Time) string { return Stamp(t).Format(time.RFC3339) }

// FormatPtr is Format for an optional time: nil stays nil (JSON null).
func FormatPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := Format(*t)
	return &s
}

// Every calls round every interval until ctx ends or round returns false:
// the loop of a background task that works in rounds. The first round is
// one interval after the call; a round that overruns the interval is
// followed by the next at once, not by a burst.
func Every(ctx context.Context, interval time.Duration, round func(context.Context) bool) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !round(ctx) {
			return
		}
	}
}
