package templates

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// reviewTransitions are the changes the network's review may make
// (docs/api.md, §Templates): pending → approved | rejected; approved →
// paused | disabled; back to approved from paused or disabled. The
// network's operator (SetStatus) may make any change.
var reviewTransitions = map[Status][]Status{
	StatusPending:  {StatusApproved, StatusRejected},
	StatusApproved: {StatusPaused, StatusDisabled},
	StatusPaused:   {StatusApproved, StatusDisabled},
	StatusDisabled: {StatusApproved},
}

// DefaultRejectedReason is the rejected_reason of a rejection that gave
// none.
const DefaultRejectedReason = "Rejected by the messaging network."

// referenceKind separates a template's network reference from a message's
// ("<schema>:<message id>").
const referenceKind = ":template:"

// Reference is the network reference of template id of t:
// "<schema>:template:<id>". The network's verdict names it.
func Reference(t db.Tenant, id int64) string {
	return t.Schema + referenceKind + strconv.FormatInt(id, 10)
}

// SetStatus sets template id's status to status as the network's operator
// may: from any status to any other. reason is the rejected_reason of a
// rejection (DefaultRejectedReason when empty) and ignored otherwise. It
// returns the template and whether it changed; a change emits
// template.status_changed in its transaction.
func (s *Service) SetStatus(ctx context.Context, t db.Tenant, id int64, status Status, reason string) (Template, bool, error) {
	return s.change(ctx, t, id, status, reason, false)
}

// Review applies the network's review verdict status to template id: only
// the changes of reviewTransitions (another is a 422
// template_transition_not_allowed); a verdict the template already has
// changes nothing.
func (s *Service) Review(ctx context.Context, t db.Tenant, id int64, status Status, reason string) (Template, bool, error) {
	return s.change(ctx, t, id, status, reason, true)
}

func (s *Service) change(ctx context.Context, t db.Tenant, id int64, status Status, reason string, review bool) (Template, bool, error) {
	if !slices.Contains(Statuses(), status) {
		var v apperr.Validation
		v.Add("status", "must be one of pending, approved, rejected, paused, disabled")
		return Template{}, false, v.Err()
	}
	reason = strings.TrimSpace(reason)
	if status != StatusRejected {
		reason = ""
	} else if reason == "" {
		reason = DefaultRejectedReason
	}
	var out Template
	changed := false
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		tpl, err := s.load(ctx, tx.Bun, t, id, true)
		if err != nil {
			return err
		}
		out = tpl
		if tpl.Status == status && tpl.RejectedReason == reason {
			return nil
		}
		if review && (tpl.Status == status || !slices.Contains(reviewTransitions[tpl.Status], status)) {
			if tpl.Status == status {
				return nil
			}
			return apperr.Invalid(CodeTransitionNotAllowed,
				fmt.Sprintf("A review may not move template %d from %s to %s.", id, tpl.Status, status))
		}
		tpl.Status, tpl.RejectedReason, tpl.UpdatedAt = status, reason, s.clock.Now()
		if _, err := tx.Bun.NewUpdate().Model(&tpl).ModelTableExpr(table(t)).
			Column("status", "rejected_reason", "updated_at").Where("t.id = ?", tpl.ID).Exec(ctx); err != nil {
			return fmt.Errorf("set status of template %d: %w", id, err)
		}
		if s.events != nil {
			if err := s.events.Emit(ctx, tx.Pgx(), t, webhooks.Event{
				Type: webhooks.EventTemplateStatus,
				Key:  "template:" + strconv.FormatInt(tpl.ID, 10),
				Data: tpl,
				At:   tpl.UpdatedAt,
			}); err != nil {
				return fmt.Errorf("record status change of template %d: %w", id, err)
			}
		}
		out, changed = tpl, true
		return nil
	})
	if err != nil {
		return Template{}, false, err
	}
	return out, changed, nil
}

// Submit sends the template of a review job to the network for review
// (network.Network.SubmitTemplate). A template that is gone or no longer
// pending is not sent: nil, nothing to do.
func (s *Service) Submit(ctx context.Context, args queue.TemplateReviewArgs) error {
	if s.net == nil {
		return errors.New("templates: no network to submit templates to (Config.Network)")
	}
	t, err := args.Tenant()
	if err != nil {
		return err
	}
	tpl, err := s.Get(ctx, t, args.TemplateID)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if tpl.Status != StatusPending {
		return nil
	}
	return s.net.SubmitTemplate(ctx, network.Template{
		Reference: Reference(t, tpl.ID),
		Name:      tpl.Name, Language: tpl.Language, Category: tpl.Category,
		Header: tpl.Header, Body: tpl.Body, Footer: tpl.Footer,
		Examples: tpl.Examples,
	})
}

// ApplyVerdict applies the network's verdict on a submitted template
// (Review). It reports whether the template changed; a verdict whose
// reference is not a template of an existing organization (or whose
// template is gone) changes nothing and is not an error.
func (s *Service) ApplyVerdict(ctx context.Context, v network.TemplateVerdict) (bool, error) {
	t, id, ok, err := s.referenceTenant(ctx, v.Reference)
	if err != nil || !ok {
		return false, err
	}
	_, changed, err := s.Review(ctx, t, id, Status(v.Status), v.Reason)
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		return false, nil
	}
	return changed, err
}

// referenceTenant maps a reference "<schema>:template:<id>" to its tenant
// and template id, through the organization's stored schema. ok is false,
// without error, when it names no template of an existing organization.
func (s *Service) referenceTenant(ctx context.Context, ref string) (db.Tenant, int64, bool, error) {
	orgID, schema, id, ok := db.ParseReference(ref, referenceKind)
	if !ok {
		return db.Tenant{}, 0, false, nil
	}
	var stored sql.NullString
	err := s.db.Bun.NewSelect().Table("central.organizations").Column("schema_name").Where("id = ?", orgID).
		Scan(ctx, &stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return db.Tenant{}, 0, false, fmt.Errorf("organization of reference %q: %w", ref, err)
	}
	t, ok := db.ReferenceTenant(orgID, schema, stored)
	return t, id, ok, nil
}
