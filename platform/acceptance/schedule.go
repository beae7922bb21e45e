package acceptance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Scheduled sends (docs/api.md, §Scheduled sends; docs/design.md,
// §Scheduled sends). A send with send_at is validated in full, its sender
// must exist in the organization and a template send must name an existing
// template (any status) whose variables it fills; nothing else is checked
// and nothing is counted: the checks of a send (sender state, recipient,
// opt-out, template approval, service window, daily limit) run at its
// release (ReleaseScheduled), as for a send made at that moment. The
// message is stored as scheduled with its release job (River, scheduled at
// send_at) in one transaction, with the Idempotency-Key's claim and answer
// when the send has one.

// CodeNotCancelable (409): a cancellation of a message that is not (or no
// longer) scheduled.
const CodeNotCancelable = "not_cancelable"

// schedule stores draft d, whose SendAt is set, as a scheduled message
// with its release job, and answers 202 with it (status scheduled).
func (s *Service) schedule(ctx context.Context, t db.Tenant, d sendrequest.Send, key string, fp []byte, now time.Time) (Result, error) {
	sn, err := s.senders.Resolve(ctx, t, d.Sender.Ref())
	if err != nil {
		return Result{}, err
	}
	r := draftRow(d, messages.StatusScheduled, now)
	r.SenderNumberID, r.SendAt = sn.ID, d.SendAt
	if d.Template != nil {
		// The template must exist and the variables fit it now; its
		// approval is checked, and the text rendered again, at release.
		if s.cfg.Templates == nil {
			return Result{}, errors.New("acceptance: no template service (Config.Templates)")
		}
		tpl, err := s.cfg.Templates.Existing(ctx, t, d.Template.Name, d.Template.Language)
		if err != nil {
			return Result{}, err
		}
		tr, err := renderResolved(tpl, d.Template)
		if err != nil {
			return Result{}, err
		}
		r.TemplateID, r.TemplateRef, r.Content = &tr.id, &tr.ref, tr.text
	}
	store := func(tx pgx.Tx) (Result, error) { return s.storeScheduled(ctx, tx, t, r) }
	if key != "" {
		return s.withKey(ctx, t, key, fp, now, store)
	}
	var res Result
	err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = store(tx)
		return err
	})
	return res, err
}

// storeScheduled inserts scheduled message r and its release job, due at
// r.SendAt, in tx, and renders the answer.
func (s *Service) storeScheduled(ctx context.Context, tx pgx.Tx, t db.Tenant, r *messages.Row) (Result, error) {
	err := s.queryNamed(ctx, tx, t, "schedule", rowArgs(r), func(rows db.Rows) error {
		if !rows.Next() {
			return errors.New("no id returned")
		}
		return rows.Scan(&r.ID)
	})
	if err != nil {
		return Result{}, fmt.Errorf("store scheduled message: %w", err)
	}
	job := queue.ReleaseJob(queue.ReleaseArgs{TenantRef: queue.RefOf(t), MessageID: r.ID}, *r.SendAt)
	if _, err := s.jobs.InsertManyFastTx(ctx, tx, []river.InsertManyParams{job}); err != nil {
		return Result{}, fmt.Errorf("schedule release of message %d: %w", r.ID, err)
	}
	return render(r)
}

// Cancel cancels scheduled message id (POST /messages/{id}/cancel): its
// status becomes canceled, with a message.canceled event in the same
// transaction, and it is never released. A message that is not scheduled
// (released, failed, canceled, inbound) → 409 not_cancelable; an unknown
// id → 404. A cancellation racing the message's release is serialised with
// it on the message's row: exactly one of the two changes it.
func (s *Service) Cancel(ctx context.Context, t db.Tenant, id int64) (messages.Message, error) {
	m, changed, err := s.endScheduled(ctx, t, id, nil)
	if err != nil || changed {
		return m, err
	}
	var status string
	found := false
	err = s.queryNamed(ctx, nil, t, "message_status", sqlq.Args{"id": id}, func(r db.Rows) error {
		if r.Next() {
			found = true
			return r.Scan(&status)
		}
		return nil
	})
	switch {
	case err != nil:
		return messages.Message{}, fmt.Errorf("read message %d: %w", id, err)
	case !found:
		return messages.Message{}, apperr.NotFound("message")
	}
	return messages.Message{}, apperr.Conflict(CodeNotCancelable,
		fmt.Sprintf("Only a scheduled message can be canceled; this message is %s.", status))
}

// endScheduled ends scheduled message id at the service's time, in a
// transaction with its webhook event: canceled when refusal is nil
// (message.canceled), else failed with refusal's code and message
// (message.failed). changed is false when the message was not scheduled.
func (s *Service) endScheduled(ctx context.Context, t db.Tenant, id int64, refusal *apperr.Error) (messages.Message, bool, error) {
	name, args := "cancel_scheduled", sqlq.Args{"id": id, "at": s.clock.Now()}
	if refusal != nil {
		name = "fail_scheduled"
		args["error_code"], args["error_message"] = refusal.Code, refusal.Message
	}
	var (
		row     messages.Row
		changed bool
	)
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		var old string
		err := s.queryNamed(ctx, tx, t, name, args, func(r db.Rows) error {
			if !r.Next() {
				return nil
			}
			changed = true
			return r.Scan(append([]any{&old}, row.ScanDest()...)...)
		})
		if err != nil || !changed {
			return err
		}
		return s.changes.Emit(ctx, tx, t, messages.AppendEvents(nil, old, &row))
	})
	if err != nil {
		return messages.Message{}, false, fmt.Errorf("end scheduled message %d: %w", id, err)
	}
	return row.Message, changed, nil
}
