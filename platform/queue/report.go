package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/network"
)

// Client is what the message service needs of River: inserting delivery
// jobs in its transactions and reading a message's job. The process's River
// client is one.
type Client interface {
	Inserter
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
}

// DeliveryJobOf returns the delivery job of the organization's message, or
// nil when River no longer keeps one (River deletes completed jobs after a
// day and discarded ones after a week). It finds the job through River's
// job list, filtered on the arguments that name the message
// (deliveryJobWhere), which the index river_job_message_delivery_idx
// serves (migrations/river/0002).
func DeliveryJobOf(ctx context.Context, c Client, orgID, messageID int64) (*rivertype.JobRow, error) {
	res, err := c.JobList(ctx, river.NewJobListParams().
		Kinds(DeliverArgs{}.Kind()).
		Where(deliveryJobWhere, river.NamedArgs{"org": orgID, "message": messageID}).
		First(1))
	if err != nil {
		return nil, fmt.Errorf("find delivery job of message %d: %w", messageID, err)
	}
	if len(res.Jobs) == 0 {
		return nil, nil
	}
	return res.Jobs[0], nil
}

// deliveryJobWhere selects the delivery job of message @message of
// organization @org: the expressions and the predicate of the partial
// index river_job_message_delivery_idx (migrations/river/0002), spelled as
// there so that the planner uses it (TestDeliveryJobWhereUsesItsIndex).
const deliveryJobWhere = `kind = 'message_delivery'
	AND (args ->> 'org_id')::bigint = @org::bigint
	AND (args ->> 'message_id')::bigint = @message::bigint`

// Delivery states, as an organization reads them (DeliveryReport.State).
const (
	// DeliveryWaiting: no attempt has failed; the job waits for a worker
	// (or for its sender's throttle).
	DeliveryWaiting = "waiting"
	// DeliveryAttempting: a worker is delivering it now.
	DeliveryAttempting = "attempting"
	// DeliveryRetrying: an attempt failed; the next one is scheduled.
	DeliveryRetrying = "retrying"
	// DeliveryDone: the delivery finished (the message is sent, or failed
	// for a reason of its own: see its status and error).
	DeliveryDone = "done"
	// DeliveryStopped: no more attempts will be made (attempts ran out, or
	// an operator cancelled it).
	DeliveryStopped = "stopped"
)

// DeliveryReport is a delivery job in its organization's terms: how many
// attempts were made, why the last one failed in plain words, and when
// the next is due. It carries nothing of other tenants or of River.
type DeliveryReport struct {
	State         string
	Attempts      int
	LastError     string
	LastAttemptAt *time.Time
	NextAttemptAt *time.Time
}

// ReportOf reads job as its organization may see it.
func ReportOf(job *rivertype.JobRow) DeliveryReport {
	r := DeliveryReport{Attempts: job.Attempt, LastAttemptAt: job.AttemptedAt}
	failed := len(job.Errors) > 0
	if failed {
		r.LastError = Reason(job.Errors[len(job.Errors)-1].Error)
	}
	switch job.State {
	case rivertype.JobStateRunning:
		r.State = DeliveryAttempting
	case rivertype.JobStateCompleted:
		r.State = DeliveryDone
	case rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		r.State = DeliveryStopped
	default: // available, pending, scheduled, retryable
		r.State = DeliveryWaiting
		if failed {
			r.State = DeliveryRetrying
		}
		next := job.ScheduledAt
		r.NextAttemptAt = &next
	}
	return r
}

// Plain-words causes of a failed delivery attempt (Reason).
const (
	ReasonNetwork     = "The messaging network could not be reached or did not answer in time."
	ReasonPlatform    = "A temporary fault on the platform interrupted the attempt."
	ReasonInterrupted = "The attempt was interrupted before it finished."
)

// reasonSep separates an attempt error's plain-words cause from its
// details (which only operators read).
const reasonSep = " — "

// attemptError is a failed attempt's error as River stores it: its cause
// in plain words, then the details.
type attemptError struct {
	reason string
	err    error
}

func (e *attemptError) Error() string { return e.reason + reasonSep + e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// Explain gives err the plain-words cause an organization reads: the
// network's refusal or failure to answer, an interrupted attempt, or else a
// fault of the platform's (its database unavailable, say).
func Explain(err error) error {
	reason := ReasonPlatform
	var pe *network.PermanentError
	switch {
	case errors.As(err, &pe):
		reason = "The messaging network refused the message (" + pe.Code + ")."
	case network.IsTransient(err):
		reason = ReasonNetwork
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		reason = ReasonInterrupted
	}
	return &attemptError{reason: reason, err: err}
}

// Reason returns the plain-words cause of a stored attempt error: the part
// the worker wrote for organizations, or ReasonInterrupted for an error
// River recorded itself (a job rescued from a dead worker, a timeout).
func Reason(stored string) string {
	if i := strings.Index(stored, reasonSep); i > 0 {
		return stored[:i]
	}
	return ReasonInterrupted
}
