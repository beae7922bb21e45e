package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
)

type sweepFunc func(context.Context) (int, error)

func (f sweepFunc) ActivateVerifiedOwners(ctx context.Context) (int, error) { return f(ctx) }

// The OTP worker retries transient failures and cancels permanent refusals;
// the sweep never retries (the next period sweeps again).
func TestWorkerOutcomes(t *testing.T) {
	t.Parallel()
	transient := errors.New("connection reset")
	permanent := fmt.Errorf("deliver otp: %w", &network.PermanentError{Code: network.CodeReceivingDisabled, Message: "no"})
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, tc := range []struct {
		name       string
		work       func() error
		wantCancel bool
		wantErr    error
	}{
		{"otp delivered", func() error {
			return (&NetworkWorker[queue.OTPArgs]{Call: func(context.Context, queue.OTPArgs) error { return nil }}).
				Work(context.Background(), &river.Job[queue.OTPArgs]{})
		}, false, nil},
		{"otp transient", func() error {
			return (&NetworkWorker[queue.OTPArgs]{Call: func(context.Context, queue.OTPArgs) error { return transient }}).
				Work(context.Background(), &river.Job[queue.OTPArgs]{})
		}, false, transient},
		{"otp permanent", func() error {
			return (&NetworkWorker[queue.OTPArgs]{Call: func(context.Context, queue.OTPArgs) error { return permanent }}).
				Work(context.Background(), &river.Job[queue.OTPArgs]{})
		}, true, nil},
		{"sweep ok", func() error {
			return (&AccountSweepWorker{Logger: quiet, Sweeper: sweepFunc(func(context.Context) (int, error) { return 2, nil })}).
				Work(context.Background(), &river.Job[queue.AccountSweepArgs]{})
		}, false, nil},
		{"sweep failure", func() error {
			return (&AccountSweepWorker{Logger: quiet, Sweeper: sweepFunc(func(context.Context) (int, error) { return 1, transient })}).
				Work(context.Background(), &river.Job[queue.AccountSweepArgs]{})
		}, true, nil},
	} {
		err := tc.work()
		var cancel *river.JobCancelError
		switch {
		case tc.wantCancel && !errors.As(err, &cancel):
			t.Errorf("%s: %v, want a JobCancel", tc.name, err)
		case !tc.wantCancel && tc.wantErr == nil && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.wantErr != nil && (!errors.Is(err, tc.wantErr) || errors.As(err, &cancel)):
			t.Errorf("%s: %v, want a retryable %v", tc.name, err, tc.wantErr)
		}
	}
	if got := (queue.OTPArgs{}).InsertOpts().MaxAttempts; got < 2 {
		t.Fatalf("OTP MaxAttempts %d", got)
	}
}
