package senders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
)

// row is a tenant's sender_numbers row.
type row struct {
	bun.BaseModel `bun:"table:sender_numbers,alias:s"`

	ID                 int64      `bun:"id,pk,autoincrement"`
	Phone              string     `bun:"phone"`
	DisplayName        string     `bun:"display_name"`
	Status             Status     `bun:"status"`
	VerificationStatus string     `bun:"verification_status"`
	DailyLimitOverride *int       `bun:"daily_limit_override"`
	OTPHash            []byte     `bun:"otp_hash"`
	OTPExpiresAt       *time.Time `bun:"otp_expires_at"`
	OTPAttempts        int        `bun:"otp_attempts"`
	OTPSentAt          *time.Time `bun:"otp_sent_at"`
	OTPGeneration      int        `bun:"otp_generation"`
	OTPIssuedAt        *time.Time `bun:"otp_issued_at"`
	VerifiedAt         *time.Time `bun:"verified_at"`
	ActivatedAt        *time.Time `bun:"activated_at"`
	CreatedAt          time.Time  `bun:"created_at"`
	UpdatedAt          time.Time  `bun:"updated_at"`
}

// sender is the row as callers see it.
func (r *row) sender() Sender {
	return Sender{
		ID:                 r.ID,
		Phone:              r.Phone,
		DisplayName:        r.DisplayName,
		Status:             r.Status,
		VerificationStatus: r.VerificationStatus,
		DailyLimitOverride: r.DailyLimitOverride,
		VerifiedAt:         r.VerifiedAt,
		ActivatedAt:        r.ActivatedAt,
		OTPSentAt:          r.OTPSentAt,
		CreatedAt:          r.CreatedAt,
		UpdatedAt:          r.UpdatedAt,
	}
}

// clearOTP forgets the current code (it was accepted, or the number left
// pending_verification).
func (r *row) clearOTP() {
	r.OTPHash = nil
	r.OTPExpiresAt = nil
	r.OTPAttempts = 0
}

// otpColumns are the columns an OTP change writes.
var otpColumns = []string{"otp_hash", "otp_expires_at", "otp_attempts", "otp_sent_at", "otp_generation", "otp_issued_at"}

// Row locks for loadRow.
const (
	noLock     = ""
	lockUpdate = "UPDATE"
)

// loadRow reads the sender with id (when id > 0) or phone, optionally locking
// it. A missing row is apperr.NotFound.
func loadRow(ctx context.Context, idb bun.IDB, t db.Tenant, id int64, phone string, lock string) (*row, error) {
	r := new(row)
	q := idb.NewSelect().Model(r).ModelTableExpr("?.sender_numbers AS s", t.Ident())
	if id > 0 {
		q = q.Where("s.id = ?", id)
	} else {
		q = q.Where("s.phone = ?", phone)
	}
	if lock != noLock {
		q = q.For(lock + " OF s")
	}
	if err := q.Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, apperr.NotFound("sender number")
		}
		return nil, fmt.Errorf("load sender number: %w", err)
	}
	return r, nil
}

// saveRow writes the given columns of r (and updated_at) back.
func saveRow(ctx context.Context, idb bun.IDB, t db.Tenant, r *row, now time.Time, cols ...string) error {
	r.UpdatedAt = now
	cols = append(cols, "updated_at")
	if _, err := idb.NewUpdate().Model(r).ModelTableExpr("?.sender_numbers AS s", t.Ident()).
		Column(cols...).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update sender number %d: %w", r.ID, err)
	}
	return nil
}

// insertRow inserts r and fills its id.
func insertRow(ctx context.Context, idb bun.IDB, t db.Tenant, r *row) error {
	_, err := idb.NewInsert().Model(r).ModelTableExpr("?.sender_numbers AS s", t.Ident()).
		Returning("id").Exec(ctx)
	return err
}

// listRows returns every sender number of the tenant, newest first.
func listRows(ctx context.Context, idb bun.IDB, t db.Tenant) ([]row, error) {
	var rows []row
	if err := idb.NewSelect().Model(&rows).ModelTableExpr("?.sender_numbers AS s", t.Ident()).
		OrderExpr("s.id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list sender numbers: %w", err)
	}
	return rows, nil
}

// The central directory of sender numbers.

// dirInsert records a new number in the central directory.
func dirInsert(ctx context.Context, idb bun.IDB, orgID int64, r *row) error {
	_, err := idb.NewRaw(`INSERT INTO central.sender_number_directory
		(organization_id, sender_id, phone, status, updated_at) VALUES (?, ?, ?, ?, ?)`,
		orgID, r.ID, r.Phone, r.Status, r.UpdatedAt).Exec(ctx)
	if err != nil {
		return fmt.Errorf("insert sender directory entry: %w", err)
	}
	return nil
}

// dirSetStatus mirrors a status change into the central directory.
func dirSetStatus(ctx context.Context, idb bun.IDB, orgID int64, r *row) error {
	_, err := idb.NewRaw(`UPDATE central.sender_number_directory SET status = ?, updated_at = ?
		WHERE organization_id = ? AND sender_id = ?`, r.Status, r.UpdatedAt, orgID, r.ID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("update sender directory entry: %w", err)
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
func dirFind(ctx context.Context, idb bun.IDB, phone string, orgID int64) ([]location, error) {
	var out []location
	q := `SELECT d.organization_id, o.schema_name, d.sender_id, d.phone, d.status
		FROM central.sender_number_directory d
		JOIN central.organizations o ON o.id = d.organization_id
		WHERE d.phone = ? AND o.schema_name IS NOT NULL`
	args := []any{phone}
	if orgID > 0 {
		q += ` AND d.organization_id = ?`
		args = append(args, orgID)
	}
	if err := idb.NewRaw(q+` ORDER BY d.organization_id`, args...).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("find sender number %s: %w", phone, err)
	}
	return out, nil
}

// dirPending returns up to limit numbers waiting for their owner's account
// verification, after the position (afterOrg, afterSender).
func dirPending(ctx context.Context, idb bun.IDB, afterOrg, afterSender int64, limit int) ([]location, error) {
	var out []location
	err := idb.NewRaw(`SELECT d.organization_id, o.schema_name, d.sender_id, d.phone, d.status
		FROM central.sender_number_directory d
		JOIN central.organizations o ON o.id = d.organization_id
		WHERE d.status = ? AND o.schema_name IS NOT NULL
		  AND (d.organization_id, d.sender_id) > (?, ?)
		ORDER BY d.organization_id, d.sender_id
		LIMIT ?`, StatusPendingAccountVerification, afterOrg, afterSender, limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list pending sender numbers: %w", err)
	}
	return out, nil
}

// claimPhone makes orgID's number the one active holder of phone. It reports
// false, without error, when another organization's number holds it.
func claimPhone(ctx context.Context, idb bun.IDB, orgID int64, r *row, now time.Time) (bool, error) {
	var holder struct {
		OrgID    int64 `bun:"organization_id"`
		SenderID int64 `bun:"sender_id"`
	}
	// A concurrent claimer's uncommitted insert makes this one wait for its
	// transaction; the conflict then leaves the existing claim alone.
	err := idb.NewRaw(`INSERT INTO central.active_sender_phones (phone, organization_id, sender_id, claimed_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (phone) DO NOTHING
		RETURNING organization_id, sender_id`, r.Phone, orgID, r.ID, now).Scan(ctx, &holder)
	if errors.Is(err, sql.ErrNoRows) {
		err = idb.NewRaw(`SELECT organization_id, sender_id FROM central.active_sender_phones WHERE phone = ?`,
			r.Phone).Scan(ctx, &holder)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil // released meanwhile; a later attempt will claim it
		}
	}
	if err != nil {
		return false, fmt.Errorf("claim phone %s: %w", r.Phone, err)
	}
	return holder.OrgID == orgID && holder.SenderID == r.ID, nil
}

// heldElsewhere reports whether another organization's number holds phone.
func heldElsewhere(ctx context.Context, idb bun.IDB, orgID int64, r *row) (bool, error) {
	var n int
	err := idb.NewRaw(`SELECT count(*) FROM central.active_sender_phones
		WHERE phone = ? AND NOT (organization_id = ? AND sender_id = ?)`, r.Phone, orgID, r.ID).Scan(ctx, &n)
	if err != nil {
		return false, fmt.Errorf("check phone %s: %w", r.Phone, err)
	}
	return n > 0, nil
}

// releasePhone drops orgID's claim on the phone, if it holds one.
func releasePhone(ctx context.Context, idb bun.IDB, orgID int64, r *row) error {
	_, err := idb.NewRaw(`DELETE FROM central.active_sender_phones
		WHERE phone = ? AND organization_id = ? AND sender_id = ?`, r.Phone, orgID, r.ID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("release phone %s: %w", r.Phone, err)
	}
	return nil
}

// organizationName returns the organization's name for OTP messages.
func organizationName(ctx context.Context, idb bun.IDB, orgID int64) (string, error) {
	var name string
	if err := idb.NewRaw(`SELECT name FROM central.organizations WHERE id = ?`, orgID).Scan(ctx, &name); err != nil {
		return "", fmt.Errorf("organization %d: %w", orgID, err)
	}
	return name, nil
}
