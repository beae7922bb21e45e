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

// attempter is a WebhookAttempter whose attempts return what attempt
// says and whose retries come after retryIn.
type attempter struct {
	attempt func(run queue.DeliveryAttempt) (webhooks.Result, error)
	retryIn time.Duration
	// asked is the run and window NextRetry asked about.
	asked struct {
		run   queue.DeliveryAttempt
		until time.Time
	}
}

func (a *attempter) Attempt(_ context.Context, _ db.Tenant, _, _ int64, run queue.DeliveryAttempt) (webhooks.Result, error) {
	return a.attempt(run)
}

func (a *attempter) RetryIn(run queue.DeliveryAttempt, until, _ time.Time) time.Duration {
	a.asked.run, a.asked.until = run, until
	return a.retryIn
}

func (*attempter) AttemptTimeout() time.Duration { return 10 * time.Second }

// The webhook worker snoozes when the service waits, returns a failed
// attempt to River, retries it and a platform failure after the service's
// delay for the job's run and window, cancels a job naming no tenant, and
// tells the service which run of the job it is.
func TestWebhookWorker(t *testing.T) {
	t.Parallel()
	platform := errors.New("database gone")
	tests := []struct {
		name      string
		schema    string
		attempt   int
		res       webhooks.Result
		err       error
		wantFinal bool
		want      string // "nil", "snooze", "failed", "error", "cancel"
	}{
		{"done", "tenant_1", 1, webhooks.Result{}, nil, false, "nil"},
		{"snooze", "tenant_1", 1, webhooks.Result{Snooze: time.Second}, nil, false, "snooze"},
		{"failed", "tenant_1", 2, webhooks.Result{Failure: "the endpoint answered 500"}, nil, false, "failed"},
		{"last run", "tenant_1", queue.DefaultWebhookMaxAttempts, webhooks.Result{}, nil, true, "nil"},
		{"platform failure", "tenant_1", 3, webhooks.Result{}, platform, false, "error"},
		{"bad tenant", "tenant_2", 1, webhooks.Result{}, nil, false, "cancel"},
	}
	until := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gotFinal bool
			a := &attempter{retryIn: 40 * time.Second, attempt: func(run queue.DeliveryAttempt) (webhooks.Result, error) {
				gotFinal = run.Last()
				return tt.res, tt.err
			}}
			w := &WebhookWorker{Attempter: a}
			job := &river.Job[queue.WebhookDeliveryArgs]{
				JobRow: &rivertype.JobRow{ID: 9, Attempt: tt.attempt, MaxAttempts: queue.DefaultWebhookMaxAttempts},
				Args:   queue.WebhookDeliveryArgs{TenantRef: queue.TenantRef{OrgID: 1, Schema: tt.schema}, DeliveryID: 5, EndpointID: 3, RetryUntil: until},
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
			if next < a.retryIn-time.Second || next > a.retryIn {
				t.Fatalf("next retry in %s, want the service's %s", next, a.retryIn)
			}
			if want := (queue.DeliveryAttempt{JobID: 9, Attempt: tt.attempt, MaxAttempts: queue.DefaultWebhookMaxAttempts}); a.asked.run != want || !a.asked.until.Equal(until) {
				t.Fatalf("NextRetry asked for %+v until %s, want %+v until %s", a.asked.run, a.asked.until, want, until)
			}
		})
	}
}
