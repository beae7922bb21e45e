package senders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/webhooks"
)

// querier runs statements: a pgx transaction or the pool.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// simple prefixes the arguments of a statement whose text names a tenant
// schema with the simple protocol: such a text differs per tenant, so
// pgx's statement cache would prepare it on every connection it meets (an
// extra round trip and Postgres memory per tenant) and rarely hit. The
// central directory's statements have one text each and keep the cache.
func simple(args ...any) []any {
	return append([]any{pgx.QueryExecModeSimpleProtocol}, args...)
}

// row is a tenant's sender_numbers row.
type row struct {
	ID                 int64      `db:"id"`
	Phone              string     `db:"phone"`
	DisplayName        string     `db:"display_name"`
	Status             Status     `db:"status"`
	VerificationStatus string     `db:"verification_status"`
	DailyLimitOverride *int       `db:"daily_limit_override"`
	OTPHash            []byte     `db:"otp_hash"`
	OTPExpiresAt       *time.Time `db:"otp_expires_at"`
	OTPAttempts        int        `db:"otp_attempts"`
	OTPSentAt          *time.Time `db:"otp_sent_at"`
	OTPGeneration      int        `db:"otp_generation"`
	OTPIssuedAt        *time.Time `db:"otp_issued_at"`
	VerifiedAt         *time.Time `db:"verified_at"`
	ActivatedAt        *time.Time `db:"activated_at"`
	CreatedAt          time.Time  `db:"created_at"`
	UpdatedAt          time.Time  `db:"updated_at"`
}

// rowColumns is the select list of row, in the alias s.
const rowColumns = `s.id, s.phone, s.display_name, s.status, s.verification_status, s.daily_limit_override,
	s.otp_hash, s.otp_expires_at, s.otp_attempts, s.otp_sent_at, s.otp_generation, s.otp_issued_at,
	s.verified_at, s.activated_at, s.created_at, s.updated_at`

// value returns the value of r's column col, for saveRow and insertRow.
func (r *row) value(col string) (any, error) {
	switch col {
	case "phone":
		return r.Phone, nil
	case "display_name":
		return r.DisplayName, nil
	case "status":
		return string(r.Status), nil
	case "verification_status":
		return r.VerificationStatus, nil
	case "daily_limit_override":
		return r.DailyLimitOverride, nil
	case "otp_hash":
		return r.OTPHash, nil
	case "otp_expires_at":
		return r.OTPExpiresAt, nil
	case "otp_attempts":
		return r.OTPAttempts, nil
	case "otp_sent_at":
		return r.OTPSentAt, nil
	case "otp_generation":
		return r.OTPGeneration, nil
	case "otp_issued_at":
		return r.OTPIssuedAt, nil
	case "verified_at":
		return r.VerifiedAt, nil
	case "activated_at":
		return r.ActivatedAt, nil
	case "created_at":
		return r.CreatedAt, nil
	case "updated_at":
		return r.UpdatedAt, nil
	}
	return nil, fmt.Errorf("sender number has no writable column %q", col)
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

// insertColumns are the columns insertRow writes (every one but id).
var insertColumns = []string{"phone", "display_name", "status", "verification_status", "daily_limit_override",
	"otp_hash", "otp_expires_at", "otp_attempts", "otp_sent_at", "otp_generation", "otp_issued_at",
	"verified_at", "activated_at", "created_at", "updated_at"}

// Row locks for loadRow.
const (
	noLock     = ""
	lockUpdate = "UPDATE"
)

// loadRow reads the sender with id (when id > 0) or phone, optionally locking
// it. A missing row is apperr.NotFound.
func loadRow(ctx context.Context, q querier, t db.Tenant, id int64, phone string, lock string) (*row, error) {
	query := `SELECT ` + rowColumns + ` FROM ` + t.Table("sender_numbers") + ` AS s`
	var arg any
	if id > 0 {
		query, arg = query+` WHERE s.id = $1`, id
	} else {
		query, arg = query+` WHERE s.phone = $1`, phone
	}
	if lock != noLock {
		query += ` FOR ` + lock + ` OF s`
	}
	rows, err := q.Query(ctx, query, simple(arg)...)
	if err != nil {
		return nil, fmt.Errorf("load sender number: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[row])
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, apperr.NotFound("sender number")
		}
		return nil, fmt.Errorf("load sender number: %w", err)
	}
	return r, nil
}

// saveRow writes the given columns of r (and updated_at) back. updated_at
// increases at every save (a microsecond past the last one when the clock
// has not moved, as a fake clock does not): the directory keeps the entry
// of the latest one (dirUpsert).
func saveRow(ctx context.Context, q querier, t db.Tenant, r *row, now time.Time, cols ...string) error {
	r.UpdatedAt = nextUpdate(r.UpdatedAt, now)
	cols = append(cols, "updated_at")
	set := make([]string, len(cols))
	args := make([]any, 0, len(cols)+1)
	for i, c := range cols {
		v, err := r.value(c)
		if err != nil {
			return fmt.Errorf("update sender number %d: %w", r.ID, err)
		}
		args = append(args, v)
		set[i] = pgx.Identifier{c}.Sanitize() + " = $" + strconv.Itoa(i+1)
	}
	args = append(args, r.ID)
	query := `UPDATE ` + t.Table("sender_numbers") + ` AS s SET ` + strings.Join(set, ", ") +
		` WHERE s.id = $` + strconv.Itoa(len(args))
	if _, err := q.Exec(ctx, query, simple(args...)...); err != nil {
		return fmt.Errorf("update sender number %d: %w", r.ID, err)
	}
	return nil
}

// nextUpdate is the updated_at of a change at now of a row last changed
// at prev: now to the microsecond (Postgres's precision), and later than
// prev.
func nextUpdate(prev, now time.Time) time.Time {
	now, prev = now.Truncate(time.Microsecond), prev.Truncate(time.Microsecond)
	if !now.After(prev) {
		return prev.Add(time.Microsecond)
	}
	return now
}

// insertRow inserts r and fills its id. A phone already registered in the
// organization is a unique violation (db.IsUniqueViolation).
func insertRow(ctx context.Context, q querier, t db.Tenant, r *row) error {
	names := make([]string, len(insertColumns))
	params := make([]string, len(insertColumns))
	args := make([]any, len(insertColumns))
	for i, c := range insertColumns {
		v, err := r.value(c)
		if err != nil {
			return err
		}
		names[i], params[i], args[i] = pgx.Identifier{c}.Sanitize(), "$"+strconv.Itoa(i+1), v
	}
	query := `INSERT INTO ` + t.Table("sender_numbers") + ` AS s (` + strings.Join(names, ", ") +
		`) VALUES (` + strings.Join(params, ", ") + `) RETURNING s.id`
	return q.QueryRow(ctx, query, simple(args...)...).Scan(&r.ID)
}

// listRows returns every sender number of the tenant, newest first.
func listRows(ctx context.Context, q querier, t db.Tenant) ([]row, error) {
	rows, err := q.Query(ctx, `SELECT `+rowColumns+` FROM `+t.Table("sender_numbers")+` AS s ORDER BY s.id DESC`,
		pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, fmt.Errorf("list sender numbers: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[row])
	if err != nil {
		return nil, fmt.Errorf("list sender numbers: %w", err)
	}
	return out, nil
}

// The central directory of sender numbers.

// dirUpsert writes a's directory entry unless the entry holds a later
// state already (the number's updated_at increases at every change, so a
// write applied twice, or after a later one, changes nothing). An entry of
// another number with the same phone in the organization is stale (the
// tenant's phones are unique) and goes.
func dirUpsert(ctx context.Context, q querier, a centralArgs) error {
	if _, err := q.Exec(ctx, `DELETE FROM central.sender_number_directory
		WHERE organization_id = $1 AND phone = $2 AND sender_id <> $3`, a.OrgID, a.Phone, a.SenderID); err != nil {
		return fmt.Errorf("write sender directory entry: %w", err)
	}
	_, err := q.Exec(ctx, `INSERT INTO central.sender_number_directory AS d
		(organization_id, sender_id, phone, status, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (organization_id, sender_id) DO UPDATE SET phone = excluded.phone, status = excluded.status,
		    updated_at = excluded.updated_at
		WHERE d.updated_at < excluded.updated_at`,
		a.OrgID, a.SenderID, a.Phone, string(a.Status), a.UpdatedAt)
	if err != nil {
		return fmt.Errorf("write sender directory entry: %w", err)
	}
	return nil
}

// statusChanged records the sender_number.status_changed event of a
// status change of r made in tx (the directory's mirror is the caller's
// toCentral).
func (s *Service) statusChanged(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
	if s.cfg.Events == nil {
		return nil
	}
	err := s.cfg.Events.Emit(ctx, tx, t, webhooks.Event{
		Type: webhooks.EventSenderStatusChanged,
		Key:  "sender_number:" + strconv.FormatInt(r.ID, 10),
		Data: r.sender(),
		At:   r.UpdatedAt,
	})
	if err != nil {
		return fmt.Errorf("record status change of sender %d: %w", r.ID, err)
	}
	return nil
}

// location is one sender number in the central directory.
type location struct {
	OrgID    int64  `db:"organization_id"`
	Schema   string `db:"schema_name"`
	SenderID int64  `db:"sender_id"`
	Phone    string `db:"phone"`
	Status   Status `db:"status"`
}

func (l location) tenant() (db.Tenant, error) { return db.NewTenant(l.OrgID, l.Schema) }

// dirFind lists the organizations where phone is registered (only orgID's
// when orgID > 0), by organization id.
func dirFind(ctx context.Context, q querier, phone string, orgID int64) ([]location, error) {
	query := `SELECT d.organization_id, o.schema_name, d.sender_id, d.phone, d.status
		FROM central.sender_number_directory d
		JOIN central.organizations o ON o.id = d.organization_id
		WHERE d.phone = $1 AND o.schema_name IS NOT NULL`
	args := []any{phone}
	if orgID > 0 {
		query += ` AND d.organization_id = $2`
		args = append(args, orgID)
	}
	out, err := collectLocations(ctx, q, query+` ORDER BY d.organization_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("find sender number %s: %w", phone, err)
	}
	return out, nil
}

// dirPending returns up to limit numbers waiting for their owner's account
// verification, after the position (afterOrg, afterSender).
func dirPending(ctx context.Context, q querier, afterOrg, afterSender int64, limit int) ([]location, error) {
	out, err := collectLocations(ctx, q, `SELECT d.organization_id, o.schema_name, d.sender_id, d.phone, d.status
		FROM central.sender_number_directory d
		JOIN central.organizations o ON o.id = d.organization_id
		WHERE d.status = $1 AND o.schema_name IS NOT NULL
		  AND (d.organization_id, d.sender_id) > ($2, $3)
		ORDER BY d.organization_id, d.sender_id
		LIMIT $4`, string(StatusPendingAccountVerification), afterOrg, afterSender, limit)
	if err != nil {
		return nil, fmt.Errorf("list pending sender numbers: %w", err)
	}
	return out, nil
}

// collectLocations runs a directory query and scans its locations.
func collectLocations(ctx context.Context, q querier, query string, args ...any) ([]location, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[location])
}

// claimPhone makes orgID's number the one active holder of phone. It reports
// false, without error, when another organization's number holds it.
func claimPhone(ctx context.Context, q querier, orgID int64, r *row, now time.Time) (bool, error) {
	var holderOrg, holderSender int64
	// A concurrent claimer's uncommitted insert makes this one wait for its
	// transaction; the conflict then leaves the existing claim alone.
	err := q.QueryRow(ctx, `INSERT INTO central.active_sender_phones (phone, organization_id, sender_id, claimed_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (phone) DO NOTHING
		RETURNING organization_id, sender_id`, r.Phone, orgID, r.ID, now).Scan(&holderOrg, &holderSender)
	if errors.Is(err, pgx.ErrNoRows) {
		err = q.QueryRow(ctx, `SELECT organization_id, sender_id FROM central.active_sender_phones WHERE phone = $1`,
			r.Phone).Scan(&holderOrg, &holderSender)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil // released meanwhile; a later attempt will claim it
		}
	}
	if err != nil {
		return false, fmt.Errorf("claim phone %s: %w", r.Phone, err)
	}
	return holderOrg == orgID && holderSender == r.ID, nil
}

// claimHeld reports whether orgID's number r holds its phone's claim: an
// activation checks it under the tenant row's lock, after its claim was
// taken in a transaction of its own (a sweep may have released it since).
func claimHeld(ctx context.Context, q querier, orgID int64, r *row) (bool, error) {
	var held bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM central.active_sender_phones
		WHERE phone = $1 AND organization_id = $2 AND sender_id = $3)`, r.Phone, orgID, r.ID).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("check claim on phone %s: %w", r.Phone, err)
	}
	return held, nil
}

// heldElsewhere reports whether another organization's number holds phone.
func heldElsewhere(ctx context.Context, q querier, orgID int64, r *row) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM central.active_sender_phones
		WHERE phone = $1 AND NOT (organization_id = $2 AND sender_id = $3)`, r.Phone, orgID, r.ID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check phone %s: %w", r.Phone, err)
	}
	return n > 0, nil
}

// releasePhone drops orgID's claim on the phone, if it holds one, and
// reports whether it did.
func releasePhone(ctx context.Context, q querier, orgID int64, r *row) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM central.active_sender_phones
		WHERE phone = $1 AND organization_id = $2 AND sender_id = $3`, r.Phone, orgID, r.ID)
	if err != nil {
		return false, fmt.Errorf("release phone %s: %w", r.Phone, err)
	}
	return tag.RowsAffected() > 0, nil
}

// organizationName returns the organization's name for OTP messages.
func organizationName(ctx context.Context, q querier, orgID int64) (string, error) {
	var name string
	if err := q.QueryRow(ctx, `SELECT name FROM central.organizations WHERE id = $1`, orgID).Scan(&name); err != nil {
		return "", fmt.Errorf("organization %d: %w", orgID, err)
	}
	return name, nil
}
