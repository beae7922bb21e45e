package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

type attemptFunc func(final bool) (webhooks.Result, error)

func (f attemptFunc) Attempt(_ context.Context, _ db.Tenant, _, _ int64, final bool) (webhooks.Result, error) {
	return f(final)
}

func (attemptFunc) AttemptTimeout() time.Duration { return 10 * time.Second }

// The webhook worker snoozes when the service waits, returns a failed
// attempt to River with the service's delay as the next retry, retries a
// platform failure with the default backoff, cancels a job naming no
// tenant, and tells the service when a run is the job's last.
func TestWebhookWorker(t *testing.T) {
	t.Parallel()
	platform := errors.New("database gone")
	tests := []struct {
		name       string
		schema     string
		attempt    int
		res        webhooks.Result
		err        error
		wantFinal  bool
		want       string // "nil", "snooze", "failed", "error", "cancel"
		wantRetry  time.Duration
		retryLower time.Duration
	}{
		{"done", "tenant_1", 1, webhooks.Result{}, nil, false, "nil", 0, 0},
		{"snooze", "tenant_1", 1, webhooks.Result{Snooze: time.Second}, nil, false, "snooze", 0, 0},
		{"failed", "tenant_1", 2, webhooks.Result{RetryIn: 40 * time.Second, Failure: "the endpoint answered 500"}, nil, false, "failed", 40 * time.Second, 0},
		{"last run", "tenant_1", queue.DefaultWebhookMaxAttempts, webhooks.Result{}, nil, true, "nil", 0, 0},
		{"platform failure", "tenant_1", 3, webhooks.Result{}, platform, false, "error", 0, 18 * time.Second},
		{"bad tenant", "tenant_2", 1, webhooks.Result{}, nil, false, "cancel", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gotFinal bool
			w := &WebhookWorker{Attempter: attemptFunc(func(final bool) (webhooks.Result, error) {
				gotFinal = final
				return tt.res, tt.err
			})}
			job := &river.Job[queue.WebhookDeliveryArgs]{
				JobRow: &rivertype.JobRow{ID: 9, Attempt: tt.attempt, MaxAttempts: queue.DefaultWebhookMaxAttempts},
				Args:   queue.WebhookDeliveryArgs{OrgID: 1, Schema: tt.schema, DeliveryID: 5, EndpointID: 3},
			}
			if w.Timeout(job) <= 10*time.Second {
				t.Fatalf("timeout %s does not leave room past the request", w.Timeout(job))
			}
			err := w.Work(context.Background(), job)
			var (
				snooze *river.JobSnoozeError
				cancel *river.JobCancelError
				failed *AttemptFailedError
			)
			switch tt.want {
			case "nil":
				if err != nil {
					t.Fatalf("Work = %v, want nil", err)
				}
			case "snooze":
				if !errors.As(err, &snooze) || snooze.Duration != tt.res.Snooze {
					t.Fatalf("Work = %v, want a snooze of %s", err, tt.res.Snooze)
				}
			case "failed":
				if !errors.As(err, &failed) || failed.Reason != tt.res.Failure {
					t.Fatalf("Work = %v, want the attempt's failure", err)
				}
			case "error":
				if !errors.Is(err, platform) || errors.As(err, &failed) {
					t.Fatalf("Work = %v, want the platform's error", err)
				}
			case "cancel":
				if !errors.As(err, &cancel) {
					t.Fatalf("Work = %v, want a cancel", err)
				}
			}
			if gotFinal != tt.wantFinal {
				t.Fatalf("final = %v, want %v", gotFinal, tt.wantFinal)
			}
			if tt.want != "failed" && tt.want != "error" {
				return
			}
			next := time.Until(w.NextRetry(job))
			switch {
			case tt.wantRetry > 0 && (next < tt.wantRetry-time.Second || next > tt.wantRetry):
				t.Fatalf("next retry in %s, want %s", next, tt.wantRetry)
			case tt.retryLower > 0 && (next < tt.retryLower || next > 2*tt.retryLower):
				t.Fatalf("next retry in %s, want the default backoff (about %s)", next, tt.retryLower)
			}
		})
	}
}
