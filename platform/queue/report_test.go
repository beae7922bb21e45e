package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/network"
)

func TestExplainAndReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"network", fmt.Errorf("deliver: %w", network.Transient(errors.New("dial tcp: connection refused"))), ReasonNetwork},
		{"refusal", &network.PermanentError{Code: "blocked_sender", Message: "x"}, "The messaging network refused the message (blocked_sender)."},
		{"deadline", fmt.Errorf("claim: %w", context.DeadlineExceeded), ReasonInterrupted},
		{"other", errors.New("claim messages of tenant_7: syntax error"), ReasonPlatform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stored := Explain(tc.err).Error()
			if got := Reason(stored); got != tc.want {
				t.Fatalf("Reason(%q) = %q, want %q", stored, got, tc.want)
			}
			if !errors.Is(Explain(tc.err), tc.err) {
				t.Fatal("explain must keep the error chain")
			}
		})
	}
	// An error River wrote itself (a rescued job, a timeout) has no cause
	// of ours: the organization reads that the attempt was interrupted.
	if got := Reason("Stuck job rescued by Rescuer"); got != ReasonInterrupted {
		t.Fatalf("River's own error: %q", got)
	}
}

func TestReportOf(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	next := at.Add(time.Minute)
	failed := []rivertype.AttemptError{{Attempt: 1, At: at, Error: Explain(network.Transient(errors.New("tenant_7 down"))).Error()}}
	for _, tc := range []struct {
		name      string
		job       rivertype.JobRow
		state     string
		lastError string
		next      bool
	}{
		{"available", rivertype.JobRow{State: rivertype.JobStateAvailable, ScheduledAt: next}, DeliveryWaiting, "", true},
		{"snoozed by the throttle", rivertype.JobRow{State: rivertype.JobStateScheduled, ScheduledAt: next}, DeliveryWaiting, "", true},
		{"retryable", rivertype.JobRow{State: rivertype.JobStateRetryable, Attempt: 1, AttemptedAt: &at, Errors: failed, ScheduledAt: next}, DeliveryRetrying, ReasonNetwork, true},
		{"running", rivertype.JobRow{State: rivertype.JobStateRunning, Attempt: 2, AttemptedAt: &at, Errors: failed}, DeliveryAttempting, ReasonNetwork, false},
		{"completed", rivertype.JobRow{State: rivertype.JobStateCompleted, Attempt: 1, AttemptedAt: &at}, DeliveryDone, "", false},
		{"discarded", rivertype.JobRow{State: rivertype.JobStateDiscarded, Attempt: 25, AttemptedAt: &at, Errors: failed}, DeliveryStopped, ReasonNetwork, false},
		{"cancelled", rivertype.JobRow{State: rivertype.JobStateCancelled, Attempt: 1, AttemptedAt: &at}, DeliveryStopped, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ReportOf(&tc.job)
			if r.State != tc.state || r.LastError != tc.lastError || r.Attempts != tc.job.Attempt || (r.NextAttemptAt != nil) != tc.next {
				t.Fatalf("ReportOf = %+v", r)
			}
			if tc.next && !r.NextAttemptAt.Equal(next) {
				t.Fatalf("next attempt %s, want %s", r.NextAttemptAt, next)
			}
		})
	}
}

func TestDeliveryJob(t *testing.T) {
	t.Parallel()
	p := DeliveryJob(DeliverArgs{TenantRef: TenantRef{OrgID: 7, Schema: "tenant_7"}, MessageID: 42, SenderID: 3})
	if p.InsertOpts == nil || p.InsertOpts.Queue != QueueDelivery || p.InsertOpts.MaxAttempts != DefaultDeliveryMaxAttempts ||
		p.InsertOpts.Metadata != nil {
		t.Fatalf("DeliveryJob = %+v", p.InsertOpts)
	}
	// The arguments that name the message are the numbers the index
	// river_job_message_delivery_idx casts to bigint.
	b, err := json.Marshal(p.Args)
	if err != nil || !strings.Contains(string(b), `"org_id":7,`) || !strings.Contains(string(b), `"message_id":42`) {
		t.Fatalf("DeliveryJob's args = %s, %v", b, err)
	}
}
