package queue_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/queue"
)

// The Rescuer frees the watched kind's jobs that have been running longer
// than its rescue time (discarding one with no attempt left), makes its
// due scheduled and retryable jobs available, and leaves everything else
// alone; a second round changes nothing.
func TestRescuer(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	ctx := context.Background()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	const after = 10 * time.Second
	r, err := queue.NewRescuer(queue.RescuerConfig{DB: d,
		Kinds: map[string]time.Duration{queue.DeliverArgs{}.Kind(): after}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// Each job is put in its state directly: state, attempted_at and
	// scheduled_at relative to now, attempt and max_attempts.
	type setup struct {
		state                string
		attemptedAgo         time.Duration
		scheduledIn          time.Duration
		attempt, maxAttempts int
	}
	tests := []struct {
		name       string
		otp        bool // a job of another kind
		setup      setup
		wantState  string
		wantRescue bool
	}{
		{"orphaned", false, setup{"running", after + time.Second, -time.Minute, 1, 25}, "available", true},
		{"orphaned on its last attempt", false, setup{"running", after + time.Second, -time.Minute, 25, 25}, "discarded", true},
		{"still within its time", false, setup{"running", after - 2*time.Second, -time.Minute, 1, 25}, "running", false},
		{"another kind, long running", true, setup{"running", time.Hour, -time.Minute, 1, 8}, "running", false},
		{"snoozed and due", false, setup{"scheduled", 0, -time.Second, 0, 25}, "available", false},
		{"retry due", false, setup{"retryable", time.Minute, -time.Second, 1, 25}, "available", false},
		{"snoozed, not due", false, setup{"scheduled", 0, time.Minute, 0, 25}, "scheduled", false},
		{"another kind, due", true, setup{"scheduled", 0, -time.Second, 0, 8}, "scheduled", false},
	}
	ids := make([]int64, len(tests))
	for i, tt := range tests {
		var args river.JobArgs = queue.DeliverArgs{TenantRef: queue.TenantRef{OrgID: 1, Schema: "tenant_1"}, MessageID: int64(i + 1)}
		if tt.otp {
			args = queue.OTPArgs{TenantRef: queue.TenantRef{OrgID: 1, Schema: "tenant_1"}, SenderID: int64(i + 1)}
		}
		res, err := rc.Insert(ctx, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Job.ID
		s := tt.setup
		var attempted any
		if s.state == "running" || s.state == "retryable" {
			attempted = s.attemptedAgo.Microseconds()
		}
		if _, err := d.Pool.Exec(ctx, `UPDATE river.river_job SET state = $2::river.river_job_state,
			attempted_at = now() - make_interval(secs => $3::bigint / 1e6), attempt = $4, max_attempts = $5,
			scheduled_at = now() + make_interval(secs => $6::bigint / 1e6) WHERE id = $1`,
			res.Job.ID, s.state, attempted, s.attempt, s.maxAttempts, s.scheduledIn.Microseconds()); err != nil {
			t.Fatal(err)
		}
	}
	n, err := r.RescueOnce(ctx)
	if err != nil || n != 2 {
		t.Fatalf("RescueOnce = %d, %v; want 2 rescued", n, err)
	}
	if n, err := r.RescueOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second RescueOnce = %d, %v; want 0", n, err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				state     string
				errs      []string
				finalized bool
				rescues   int
			)
			if err := d.Pool.QueryRow(ctx, `SELECT state, coalesce(array(SELECT e ->> 'error' FROM unnest(errors) e), '{}'),
				finalized_at IS NOT NULL, coalesce((metadata ->> 'river:rescue_count')::int, 0)
				FROM river.river_job WHERE id = $1`, ids[i]).Scan(&state, &errs, &finalized, &rescues); err != nil {
				t.Fatal(err)
			}
			if state != tt.wantState || finalized != (state == "discarded") {
				t.Fatalf("state %s (finalized %v), want %s", state, finalized, tt.wantState)
			}
			rescued := len(errs) == 1 && strings.HasPrefix(errs[0], queue.ReasonInterrupted) &&
				strings.Contains(errs[0], "its worker stopped answering") && rescues == 1
			if rescued != tt.wantRescue || (!tt.wantRescue && (len(errs) != 0 || rescues != 0)) {
				t.Fatalf("errors %q, rescues %d; want rescued: %v", errs, rescues, tt.wantRescue)
			}
			if tt.wantRescue && queue.Reason(errs[0]) != queue.ReasonInterrupted {
				t.Fatalf("the organization reads %q", queue.Reason(errs[0]))
			}
		})
	}
}

// The defaults: a delivery's run bound is a 5 s network call plus the
// margin; it is orphaned 2 s later; River's own rescue comes after the
// longest timeout of the other kinds.
func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   queue.Config
		want func(queue.Config) bool
	}{
		{"defaults", queue.Config{}, func(c queue.Config) bool {
			return c.DeliveryTimeout == 8*time.Second && c.DeliveryRescueAfter == 10*time.Second &&
				c.RescueInterval == time.Second && c.JobTimeout == time.Minute && c.RescueStuckJobsAfter == 75*time.Second
		}},
		{"a network timeout of 2 s", queue.Config{DeliveryTimeout: 2*time.Second + queue.DeliveryTimeoutMargin}, func(c queue.Config) bool {
			return c.DeliveryTimeout == 5*time.Second && c.DeliveryRescueAfter == 7*time.Second
		}},
		{"set", queue.Config{JobTimeout: 2 * time.Second, RescueStuckJobsAfter: 3 * time.Second, DeliveryRescueAfter: 4 * time.Second},
			func(c queue.Config) bool {
				return c.JobTimeout == 2*time.Second && c.RescueStuckJobsAfter == 3*time.Second && c.DeliveryRescueAfter == 4*time.Second
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.in.WithDefaults(); !tt.want(got) {
				t.Fatalf("WithDefaults() = %+v", got)
			}
		})
	}
}
