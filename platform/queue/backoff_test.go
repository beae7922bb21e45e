package queue

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		attempt   int
		base, max time.Duration
		want      time.Duration
	}{
		{1, 0, 0, time.Second},
		{2, 0, 0, 2 * time.Second},
		{5, 0, 0, 16 * time.Second},
		{10, 0, 0, 512 * time.Second},
		{11, 0, 0, 10 * time.Minute},
		{100, 0, 0, 10 * time.Minute},
		{0, 0, 0, time.Second},
		{3, 100 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond},
		{2, 100 * time.Millisecond, time.Second, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		for range 20 {
			got := Backoff(tt.attempt, tt.base, tt.max)
			lo, hi := tt.want*9/10, tt.want*11/10
			if got < lo || got > hi {
				t.Fatalf("Backoff(%d, %s, %s) = %s, want %s ±10%%", tt.attempt, tt.base, tt.max, got, tt.want)
			}
		}
	}
}

func TestDeliveryAttempt(t *testing.T) {
	t.Parallel()
	a := DeliveryAttempt{JobID: 7, Attempt: 3, MaxAttempts: 3}
	if !a.Last() {
		t.Fatalf("%+v: last %v", a, a.Last())
	}
	if (DeliveryAttempt{Attempt: 1, MaxAttempts: 25}).Last() {
		t.Fatal("first of 25 is not the last")
	}
	if (DeliverArgs{}).InsertOpts().Queue != QueueDelivery {
		t.Fatal("deliveries must go to their own queue")
	}
}

// A webhook job's retry delay is the backoff of its attempt, the same for
// the same job and attempt wherever it is computed, and cut at the end of
// the delivery's window while that is ahead.
func TestWebhookRetryIn(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	run := DeliveryAttempt{JobID: 42, Attempt: 3, MaxAttempts: 100}
	base, maxDelay := 5*time.Second, time.Hour
	got := WebhookRetryIn(run, base, maxDelay, time.Time{}, now)
	if got < 18*time.Second || got > 22*time.Second {
		t.Fatalf("third attempt's retry in %s, want 20 s ±10%%", got)
	}
	if again := WebhookRetryIn(run, base, maxDelay, now.Add(24*time.Hour), now.Add(time.Millisecond)); again != got {
		t.Fatalf("the same job and attempt: %s, then %s", got, again)
	}
	jitters := map[time.Duration]bool{}
	for id := range int64(20) {
		jitters[WebhookRetryIn(DeliveryAttempt{JobID: id, Attempt: 3}, base, maxDelay, time.Time{}, now)] = true
	}
	if len(jitters) < 10 {
		t.Fatalf("20 jobs' third retries took %d delays; the jitter does not spread them", len(jitters))
	}
	cases := []struct {
		name  string
		until time.Time
		want  time.Duration
	}{
		{"cut at the window's end", now.Add(7 * time.Second), 7 * time.Second},
		{"the window over: the backoff", now.Add(-time.Second), got},
	}
	for _, c := range cases {
		if d := WebhookRetryIn(run, base, maxDelay, c.until, now); d != c.want {
			t.Errorf("%s: %s, want %s", c.name, d, c.want)
		}
	}
}
