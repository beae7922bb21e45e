package senders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The central directory of sender numbers and the claims on phones.

// dirUpsert writes a's directory entry in q unless the entry holds a
// later state already (the number's updated_at increases at every
// change, so a write applied twice, or after a later one, changes
// nothing). An entry of another number with the same phone in the
// organization is stale (the tenant's phones are unique) and goes.
func (n named) dirUpsert(ctx context.Context, q querier, a centralArgs) error {
	args := sqlq.Args{"org_id": a.OrgID, "sender_id": a.SenderID, "phone": a.Phone,
		"status": string(a.Status), "updated_at": a.UpdatedAt}
	for _, name := range []string{"drop_stale_entry", "upsert_entry"} {
		text, vals, err := n.central(name, args)
		if err == nil {
			_, err = q.Exec(ctx, text, vals...)
		}
		if err != nil {
			return fmt.Errorf("write sender directory entry: %w", err)
		}
	}
	return nil
}

// location is one sender number in the central directory.
type location struct {
	OrgID    int64  `bun:"organization_id"`
	Schema   string `bun:"schema_name"`
	SenderID int64  `bun:"sender_id"`
	Phone    string `bun:"phone"`
	Status   Status `bun:"status"`
}

func (l location) tenant() (db.Tenant, error) { return db.NewTenant(l.OrgID, l.Schema) }

// dirFind lists the organizations where phone is registered (only orgID's
// when orgID > 0), by organization id.
func (s *Service) dirFind(ctx context.Context, phone string, orgID int64) ([]location, error) {
	var out []location
	if err := s.q.Raw(s.db.Bun, "find", sqlq.Args{"phone": phone, "org_id": orgID}).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("find sender number %s: %w", phone, err)
	}
	return out, nil
}

// dirPending returns up to limit numbers waiting for their owner's account
// verification, after the position (afterOrg, afterSender).
func (s *Service) dirPending(ctx context.Context, afterOrg, afterSender int64, limit int) ([]location, error) {
	var out []location
	err := s.q.Raw(s.db.Bun, "pending", sqlq.Args{"status": string(StatusPendingAccountVerification),
		"after_org": afterOrg, "after_sender": afterSender, "limit": limit}).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list pending sender numbers: %w", err)
	}
	return out, nil
}

// staleClaims lists the claims older than before whose directory entry
// is neither active nor suspended (releaseStaleClaims).
func (s *Service) staleClaims(ctx context.Context, before time.Time) ([]location, error) {
	var out []location
	err := s.q.Raw(s.db.Bun, "stale_claims", sqlq.Args{"before": before,
		"active": string(StatusActive), "suspended": string(StatusSuspended)}).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list stale sender claims: %w", err)
	}
	return out, nil
}

// claim is a row of central.active_sender_phones: the one number active
// (or suspended after being active) with its phone.
type claim struct {
	bun.BaseModel `bun:"table:central.active_sender_phones,alias:a"`

	Phone          string    `bun:"phone,pk"`
	OrganizationID int64     `bun:"organization_id"`
	SenderID       int64     `bun:"sender_id"`
	ClaimedAt      time.Time `bun:"claimed_at"`
}

// claimPhone makes orgID's number the one active holder of phone. It reports
// false, without error, when another organization's number holds it.
func (s *Service) claimPhone(ctx context.Context, orgID int64, r *row, now time.Time) (bool, error) {
	// A concurrent claimer's uncommitted insert makes this one wait for its
	// transaction; the conflict then leaves the existing claim alone.
	res, err := s.db.Bun.NewInsert().Model(&claim{Phone: r.Phone, OrganizationID: orgID, SenderID: r.ID, ClaimedAt: now}).
		On("CONFLICT (phone) DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("claim phone %s: %w", r.Phone, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, fmt.Errorf("claim phone %s: %w", r.Phone, err)
	} else if n == 1 {
		return true, nil
	}
	var holder claim
	err = s.db.Bun.NewSelect().Model(&holder).Where("a.phone = ?", r.Phone).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil // released meanwhile; a later attempt will claim it
	case err != nil:
		return false, fmt.Errorf("claim phone %s: %w", r.Phone, err)
	}
	return holder.OrganizationID == orgID && holder.SenderID == r.ID, nil
}

// claimArgs are the arguments naming orgID's number r's claim.
func claimArgs(orgID int64, r *row) sqlq.Args {
	return sqlq.Args{"phone": r.Phone, "org_id": orgID, "sender_id": r.ID}
}

// claimHeld reports whether orgID's number r holds its phone's claim: an
// activation checks it in tx, under the tenant row's lock, after its claim
// was taken in a transaction of its own (a sweep may have released it
// since).
func (n named) claimHeld(ctx context.Context, tx pgx.Tx, orgID int64, r *row) (bool, error) {
	var held bool
	text, vals, err := n.central("claim_held", claimArgs(orgID, r))
	if err == nil {
		err = tx.QueryRow(ctx, text, vals...).Scan(&held)
	}
	if err != nil {
		return false, fmt.Errorf("check claim on phone %s: %w", r.Phone, err)
	}
	return held, nil
}

// heldElsewhere reports, in tx, whether another organization's number
// holds phone.
func (n named) heldElsewhere(ctx context.Context, tx pgx.Tx, orgID int64, r *row) (bool, error) {
	var count int
	text, vals, err := n.central("held_elsewhere", claimArgs(orgID, r))
	if err == nil {
		err = tx.QueryRow(ctx, text, vals...).Scan(&count)
	}
	if err != nil {
		return false, fmt.Errorf("check phone %s: %w", r.Phone, err)
	}
	return count > 0, nil
}

// releasePhone drops orgID's claim on the phone, if it holds one, and
// reports whether it did.
func (s *Service) releasePhone(ctx context.Context, orgID int64, r *row) (bool, error) {
	res, err := s.db.Bun.NewDelete().Model((*claim)(nil)).
		Where("a.phone = ?", r.Phone).Where("a.organization_id = ?", orgID).Where("a.sender_id = ?", r.ID).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("release phone %s: %w", r.Phone, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("release phone %s: %w", r.Phone, err)
	}
	return n > 0, nil
}

// organizationName returns the organization's name for OTP messages.
func (s *Service) organizationName(ctx context.Context, orgID int64) (string, error) {
	var name string
	err := s.db.Bun.NewSelect().TableExpr("central.organizations AS o").ColumnExpr("o.name").
		Where("o.id = ?", orgID).Scan(ctx, &name)
	if err != nil {
		return "", fmt.Errorf("organization %d: %w", orgID, err)
	}
	return name, nil
}
