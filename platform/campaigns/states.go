package campaigns

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/platform/webhooks"
)

// The changes of state (docs/api.md, §Campaigns: states). Each is one
// UPDATE ... WHERE status IN (the states it leaves), so of two concurrent
// calls one changes the campaign and the other finds it in the new state:
// the named queries start, pause, resume, run_due and cancel (with
// skip_pending, a canceled campaign's pending recipients skipped).

// Start starts draft campaign id: running, or scheduled when its send_at
// is ahead. It needs at least one recipient (422 campaign_no_recipients),
// every sender number active (422 sender_not_active naming the first
// that is not) and a template campaign's template approved (422
// template_not_approved; template_not_found when deleted). A campaign
// that runs emits campaign.started. Errors: 404; 409 campaign_state from
// any other state.
func (s *Service) Start(ctx context.Context, t db.Tenant, id int64) (Campaign, error) {
	return s.change(ctx, t, id, "starting it", func(tx pgx.Tx, c Campaign, now time.Time) (string, sqlq.Args, error) {
		if c.Status != StatusDraft {
			return "", nil, errState(c, "starting it")
		}
		if err := s.startable(ctx, tx, t, c); err != nil {
			return "", nil, err
		}
		next := StatusRunning
		if c.SendAt != nil && c.SendAt.After(now) {
			next = StatusScheduled
		}
		return "start", sqlq.Args{"id": id, "status": string(next), "now": now}, nil
	})
}

// startable checks what Start needs of c, in tx: recipients, active
// sender numbers, an approved template (share-locked to tx's end).
func (s *Service) startable(ctx context.Context, tx pgx.Tx, t db.Tenant, c Campaign) error {
	if c.Counts.Total == 0 {
		return apperr.Invalid(CodeNoRecipients, "The campaign has no recipients: add some before starting it.")
	}
	statuses, err := s.senderStatuses(ctx, tx, t, c.SenderNumberIDs)
	if err != nil {
		return err
	}
	for _, sid := range c.SenderNumberIDs {
		if st := statuses[sid]; st != string(senders.StatusActive) {
			e := apperr.Invalid(senders.CodeSenderNotActive, fmt.Sprintf("The sender number %d is not active.", sid))
			e.Details = map[string]any{"sender_number_id": sid}
			if st != "" {
				e.Details["sender_status"] = st
			}
			return e
		}
	}
	if c.TemplateID == nil {
		return nil
	}
	st, found, err := s.templates.Status(ctx, tx, t, *c.TemplateID)
	switch {
	case err != nil:
		return err
	case !found:
		return templates.ErrNotFoundForSend(c.Template.Name, c.Template.Language)
	case st != templates.StatusApproved:
		return templates.ErrNotApproved(c.Template.Name, c.Template.Language, st)
	}
	return nil
}

// Pause pauses running or scheduled campaign id: nothing more is released
// until it is resumed. Errors: 404; 409 campaign_state from any other
// state.
func (s *Service) Pause(ctx context.Context, t db.Tenant, id int64) (Campaign, error) {
	return s.change(ctx, t, id, "pausing it", func(_ pgx.Tx, c Campaign, now time.Time) (string, sqlq.Args, error) {
		if c.Status != StatusRunning && c.Status != StatusScheduled {
			return "", nil, errState(c, "pausing it")
		}
		return "pause", sqlq.Args{"id": id, "now": now}, nil
	})
}

// Resume resumes paused campaign id: scheduled while its send_at is
// ahead, else running (its first run emits campaign.started). Errors:
// 404; 409 campaign_state from any other state.
func (s *Service) Resume(ctx context.Context, t db.Tenant, id int64) (Campaign, error) {
	return s.change(ctx, t, id, "resuming it", func(_ pgx.Tx, c Campaign, now time.Time) (string, sqlq.Args, error) {
		if c.Status != StatusPaused {
			return "", nil, errState(c, "resuming it")
		}
		return "resume", sqlq.Args{"id": id, "now": now}, nil
	})
}

// Cancel cancels campaign id (draft, scheduled, running or paused): its
// pending recipients become skipped (campaign_canceled) in the same
// transaction. Errors: 404; 409 campaign_state once completed or
// canceled.
func (s *Service) Cancel(ctx context.Context, t db.Tenant, id int64) (Campaign, error) {
	return s.change(ctx, t, id, "canceling it", func(tx pgx.Tx, c Campaign, now time.Time) (string, sqlq.Args, error) {
		if c.Status == StatusCompleted || c.Status == StatusCanceled {
			return "", nil, errState(c, "canceling it")
		}
		if _, err := db.ExecNamed(ctx, tx, s.q, "skip_pending", t.Quoted(), sqlq.Args{"id": id, "code": CodeCampaignCanceled, "now": now}); err != nil {
			return "", nil, fmt.Errorf("skip pending recipients of campaign %d: %w", id, err)
		}
		return "cancel", sqlq.Args{"id": id, "now": now}, nil
	})
}

// RunDue turns scheduled campaign id running in tx once its send_at has
// come, emitting campaign.started, and reports whether it did: for the
// release, which finds the campaigns due. A campaign not scheduled, or
// not yet due, is left as it is (false).
func (s *Service) RunDue(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (bool, error) {
	rows, err := s.query(ctx, tx, t, "run_due", sqlq.Args{"id": id, "now": s.clock.Now()})
	if err != nil {
		return false, fmt.Errorf("run campaign %d: %w", id, err)
	}
	list, err := pgx.CollectRows(rows, scanCampaign)
	if err != nil || len(list) == 0 {
		return false, err
	}
	return true, s.started(ctx, tx, t, list[0], nil)
}

// step decides a change of campaign c (locked in tx) at now: the named
// query that makes it and its arguments, or why it may not happen.
type step func(tx pgx.Tx, c Campaign, now time.Time) (string, sqlq.Args, error)

// change runs one change of state of campaign id in a transaction: it
// locks the campaign, lets decide check it, runs its statement, emits
// campaign.started if the campaign ran for the first time, and wakes the
// releaser, all before the commit. It returns the campaign with its
// counts, as committed.
func (s *Service) change(ctx context.Context, t db.Tenant, id int64, action string, decide step) (Campaign, error) {
	err := db.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		old, err := s.load(ctx, tx, t, id, true)
		if err != nil {
			return err
		}
		name, args, err := decide(tx, old, s.clock.Now())
		if err != nil {
			return err
		}
		rows, err := s.query(ctx, tx, t, name, args)
		if err != nil {
			return fmt.Errorf("campaign %d, %s: %w", id, action, err)
		}
		list, err := pgx.CollectRows(rows, scanCampaign)
		if err != nil {
			return fmt.Errorf("campaign %d, %s: %w", id, action, err)
		}
		if len(list) == 0 {
			// Locked above: only a bug in decide gets here.
			return errState(old, action)
		}
		if err := s.started(ctx, tx, t, list[0], old.StartedAt); err != nil {
			return err
		}
		if s.releaser != nil {
			if err := s.releaser.Wake(ctx, tx, t, id); err != nil {
				return fmt.Errorf("wake the release of campaign %d: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return Campaign{}, err
	}
	return s.Get(ctx, t, id)
}

// started emits campaign.started in tx when c runs for the first time
// (it has a started_at, and before had none).
func (s *Service) started(ctx context.Context, tx pgx.Tx, t db.Tenant, c Campaign, before *time.Time) error {
	if s.events == nil || c.StartedAt == nil || before != nil {
		return nil
	}
	list := []Campaign{c}
	if err := s.withCounts(ctx, tx, t, list); err != nil {
		return err
	}
	return s.events.Emit(ctx, tx, t, webhooks.Event{
		Type: webhooks.EventCampaignStarted, Key: fmt.Sprintf("campaign:%d", c.ID), Data: list[0], At: *c.StartedAt,
	})
}

// errState is the 409 campaign_state of an action c's state does not
// allow ("pausing it").
func errState(c Campaign, action string) error {
	e := apperr.Conflict(CodeCampaignState, fmt.Sprintf("The campaign is %s, which does not allow %s.", c.Status, action))
	e.Details = map[string]any{"status": string(c.Status)}
	return e
}
