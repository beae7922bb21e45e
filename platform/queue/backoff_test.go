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
