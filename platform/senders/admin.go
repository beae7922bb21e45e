package senders

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/audit"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/phone"
)

// Error codes of the operator operations.
const (
	// CodeAmbiguous: the phone is registered in several organizations and no
	// organization was named.
	CodeAmbiguous = "sender_ambiguous"
	// CodeRejectedFinal: the number is rejected, which is final.
	CodeRejectedFinal = "sender_rejected"
	// CodeAlreadySuspended: suspend of a suspended number.
	CodeAlreadySuspended = "sender_already_suspended"
	// CodeNotSuspended: unsuspend of a number that is not suspended.
	CodeNotSuspended = "sender_not_suspended"
)

// AdminTarget names a sender number for an operator: its phone and, when the
// phone is registered in several organizations, the organization.
type AdminTarget struct {
	Phone string
	// OrgID is 0 when not given.
	OrgID int64
}

// AdminResult is the outcome of an operator operation.
type AdminResult struct {
	OrganizationID int64
	PreviousStatus Status
	Sender         Sender
}

// MarshalJSON renders {"organization_id", "previous_status", "sender"}.
func (r AdminResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		OrganizationID int64  `json:"organization_id"`
		PreviousStatus Status `json:"previous_status"`
		Sender         Sender `json:"sender"`
	}{r.OrganizationID, r.PreviousStatus, r.Sender})
}

// Suspend suspends the number (any state but rejected). A suspended number
// cannot send; an active one keeps its claim on the phone, so lifting the
// suspension can always restore it.
func (s *Service) Suspend(ctx context.Context, target AdminTarget) (AdminResult, error) {
	return s.statusChange(ctx, target, audit.ActionSenderSuspend, func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
		if r.Status == StatusSuspended {
			return apperr.Invalid(CodeAlreadySuspended, "The sender number is already suspended.")
		}
		r.Status = StatusSuspended
		return s.saveStatus(ctx, tx, t, r)
	})
}

// Unsuspend returns a suspended number to the state its verification facts
// give: OTP not accepted → pending_verification (a new code is needed);
// accepted and the owner's network account verified → active; accepted and
// the owner unverified → pending_account_verification. If the phone became
// active in another organization meanwhile, the number waits in
// pending_account_verification and the sweep activates it once the phone is
// free. The phone's claim is taken before the tenant's transaction, in one
// of its own, and released unless the number holds it after.
func (s *Service) Unsuspend(ctx context.Context, target AdminTarget) (AdminResult, error) {
	loc, t, err := s.locate(ctx, target)
	if err != nil {
		return AdminResult{}, err
	}
	pre, err := getRow(ctx, s.db.Bun, t, loc.SenderID)
	if err != nil {
		return AdminResult{}, err
	}
	claimed := false
	if pre.Status == StatusSuspended && pre.VerificationStatus == VerificationVerified {
		verified, err := s.ownerVerified(ctx, pre.Phone)
		if err != nil {
			return AdminResult{}, err
		}
		if verified {
			if claimed, err = s.claimFirst(ctx, t, pre.ID, pre.Phone); err != nil {
				return AdminResult{}, err
			}
		}
	}
	res, err := s.changeAt(ctx, t, loc.SenderID, audit.ActionSenderUnsuspend, true, func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
		if r.Status != StatusSuspended {
			return apperr.Invalid(CodeNotSuspended,
				fmt.Sprintf("The sender number is not suspended (its status is %s).", r.Status))
		}
		if r.VerificationStatus != VerificationVerified {
			r.Status = StatusPendingVerification
			return s.saveStatus(ctx, tx, t, r)
		}
		r.Status = StatusPendingAccountVerification
		if claimed && r.Phone == pre.Phone {
			held, err := s.q.claimHeld(ctx, tx, t.OrgID, r)
			if err != nil {
				return err
			}
			if held {
				now := s.clock.Now()
				r.Status = StatusActive
				r.ActivatedAt = &now
			}
		}
		return s.saveStatus(ctx, tx, t, r)
	})
	if claimed {
		s.compensate(ctx, t, pre.ID, pre.Phone)
	}
	return res, err
}

// Reject rejects the number for good: it can never send or change state
// again, and its claim on the phone (if active) is released, after the
// rejection's commit (a claim a crash leaves there is released by the
// periodic sweep: releaseStaleClaims).
func (s *Service) Reject(ctx context.Context, target AdminTarget) (AdminResult, error) {
	res, err := s.statusChange(ctx, target, audit.ActionSenderReject, func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
		r.Status = StatusRejected
		r.clearOTP()
		return s.saveStatus(ctx, tx, t, r)
	})
	if err != nil {
		return res, err
	}
	if _, err := s.releasePhone(ctx, res.OrganizationID, &row{ID: res.Sender.ID, Phone: res.Sender.Phone}); err != nil {
		s.log.WarnContext(ctx, "release the phone of a rejected sender", "organization_id", res.OrganizationID,
			"sender_id", res.Sender.ID, "error", err)
	}
	return res, nil
}

// SetLimit sets the number's daily limit override; nil clears it (the
// organization's default applies).
func (s *Service) SetLimit(ctx context.Context, target AdminTarget, limit *int) (AdminResult, error) {
	if limit != nil {
		var v apperr.Validation
		validateDailyLimit(&v, "limit", *limit)
		if err := v.Err(); err != nil {
			return AdminResult{}, err
		}
	}
	return s.adminChange(ctx, target, audit.ActionSenderSetLimit, false, func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
		r.DailyLimitOverride = limit
		return s.q.saveRow(ctx, tx, t, r, s.clock.Now())
	})
}

// saveStatus writes the changed row and records the change's event;
// adminChange writes its directory mirror.
func (s *Service) saveStatus(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
	if err := s.q.saveRow(ctx, tx, t, r, s.clock.Now()); err != nil {
		return err
	}
	return s.statusChanged(ctx, tx, t, r)
}

// adminChange finds the target and changes it (changeAt); status says
// whether the change is one of the number's status, which a rejected
// number refuses (its rejection is final).
func (s *Service) adminChange(ctx context.Context, target AdminTarget, action string, status bool,
	change func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error) (AdminResult, error) {
	loc, t, err := s.locate(ctx, target)
	if err != nil {
		return AdminResult{}, err
	}
	return s.changeAt(ctx, t, loc.SenderID, action, status, change)
}

// changeAt applies change to number id of t under the row lock, and
// records the operator action in the audit log (actor operator) with the
// number's directory mirror through the outbox (toCentral), moved after
// the commit.
func (s *Service) changeAt(ctx context.Context, t db.Tenant, id int64, action string, status bool,
	change func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error) (AdminResult, error) {
	var res AdminResult
	err := s.inRowTx(ctx, t, id, func(tx pgx.Tx, r *row) error {
		prev := r.Status
		if status && r.Status == StatusRejected {
			return errRejectedFinal()
		}
		if err := change(ctx, tx, t, r); err != nil {
			return err
		}
		if err := s.toCentral(ctx, tx, t, r, &audit.Entry{
			Actor:  audit.Operator(),
			Action: action,
			Details: map[string]any{
				"phone": r.Phone, "previous_status": prev, "status": r.Status,
				"daily_limit_override": r.DailyLimitOverride,
			},
			At: s.clock.Now(),
		}); err != nil {
			return err
		}
		res = AdminResult{OrganizationID: t.OrgID, PreviousStatus: prev, Sender: r.sender()}
		return nil
	})
	if err != nil {
		return AdminResult{}, err
	}
	s.flush(ctx, t)
	return res, nil
}

// statusChange is adminChange for a change of the number's status.
func (s *Service) statusChange(ctx context.Context, target AdminTarget, action string,
	change func(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error) (AdminResult, error) {
	return s.adminChange(ctx, target, action, true, change)
}

// locate finds the one number the target names, and its tenant.
func (s *Service) locate(ctx context.Context, target AdminTarget) (location, db.Tenant, error) {
	loc, err := s.find(ctx, target)
	if err != nil {
		return location{}, db.Tenant{}, err
	}
	t, err := loc.tenant()
	return loc, t, err
}

// find is locate's directory lookup.
func (s *Service) find(ctx context.Context, target AdminTarget) (location, error) {
	var v apperr.Validation
	e164 := phone.Required(&v, "phone", target.Phone)
	if err := v.Err(); err != nil {
		return location{}, err
	}
	locs, err := s.dirFind(ctx, e164, target.OrgID)
	if err != nil {
		return location{}, err
	}
	switch len(locs) {
	case 0:
		if target.OrgID > 0 {
			return location{}, apperr.New(apperr.KindNotFound, "not_found",
				fmt.Sprintf("No sender number %s in organization %d.", e164, target.OrgID))
		}
		return location{}, apperr.New(apperr.KindNotFound, "not_found",
			fmt.Sprintf("No sender number %s is registered in any organization.", e164))
	case 1:
		return locs[0], nil
	}
	orgs := make([]string, len(locs))
	for i, l := range locs {
		orgs[i] = fmt.Sprintf("%d (%s)", l.OrgID, l.Status)
	}
	e := apperr.Invalid(CodeAmbiguous, fmt.Sprintf(
		"Sender number %s is registered in several organizations: %s. Name one with --org.",
		e164, strings.Join(orgs, ", ")))
	ids := make([]int64, len(locs))
	for i, l := range locs {
		ids[i] = l.OrgID
	}
	e.Details = map[string]any{"organization_ids": ids}
	return location{}, e
}

func errRejectedFinal() *apperr.Error {
	return apperr.Invalid(CodeRejectedFinal, "The sender number is rejected; rejection is final.")
}
