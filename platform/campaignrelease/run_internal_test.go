package campaignrelease

import (
	"testing"
	"time"
)

// TestWindow: 1 s while ticks come at most 500 ms apart, one period plus
// the lead beyond that, never more than 2 s; the run's first tick counts
// the tick's own period.
func TestWindow(t *testing.T) {
	t.Parallel()
	var m marks
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tick := 500 * time.Millisecond
	steps := []struct {
		after time.Duration
		want  time.Duration
	}{
		{0, time.Second},
		{500 * time.Millisecond, time.Second},
		{300 * time.Millisecond, time.Second},
		{900 * time.Millisecond, 1400 * time.Millisecond},
		{5 * time.Second, 2 * time.Second},
	}
	for i, s := range steps {
		at = at.Add(s.after)
		if got := m.window(at, tick); got != s.want {
			t.Errorf("step %d (%v after the previous): window %v, want %v", i, s.after, got, s.want)
		}
	}
}

// TestMarks: from moves on past the recipients a tick ended, up to the
// first still pending, and never back; low follows the oldest queued
// message, and the tick's own messages when none was queued.
func TestMarks(t *testing.T) {
	t.Parallel()
	var m marks
	m.sawPool([]Sender{{ID: 1}, {ID: 2}})
	m.moveOn([]recipient{
		{id: 10, ended: true, messageID: 500},
		{id: 11, ended: true, messageID: 501},
		{id: 12, ended: false},
		{id: 13, ended: true, messageID: 502},
	})
	if m.from != 12 || m.low != 500 {
		t.Fatalf("after a tick leaving 12 pending: from %d, low %d; want 12, 500", m.from, m.low)
	}
	m.sawPool([]Sender{{ID: 1, oldest: 501}, {ID: 2, oldest: 0}})
	m.moveOn([]recipient{
		{id: 12, ended: true, messageID: 600},
		{id: 14, ended: true, messageID: 601},
	})
	if m.from != 15 || m.low != 501 {
		t.Fatalf("after a tick ending all: from %d, low %d; want 15, 501", m.from, m.low)
	}
	m.sawPool([]Sender{{ID: 1}})
	m.moveOn([]recipient{{id: 15}, {id: 16}})
	if m.from != 15 || m.low != 501 {
		t.Fatalf("after a tick ending none: from %d, low %d; want 15, 501", m.from, m.low)
	}
}
