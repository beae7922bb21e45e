package senders

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// queries are the package's named queries (platform/sqlq): the statements
// of its pgx transactions and of the send path, written for pgx by
// sqlq.Queries.Pgx, and the directory's joins, run on bun.
//
//go:embed queries/*.sql
var queries embed.FS

// querier runs statements: a pgx transaction or the pool.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// named are the package's named queries: the directory's joins run on
// bun (Raw), and its methods run on pgx the statements of the service's
// pgx transactions (which also hold its job, its audit entry and its
// webhook event, all on pgx), of the outbox's coordinator transaction
// (Central.Apply) and of a send's sender (Resolve).
type named struct{ *sqlq.Queries }

// loadNamed loads the package's named queries.
func loadNamed() (named, error) {
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return named{}, fmt.Errorf("senders: %w", err)
	}
	return named{q}, nil
}

// tenant returns query name on t's tables as pgx runs it: its text and
// its arguments, after pgx.QueryExecModeSimpleProtocol. The text names
// the tenant's schema, so it differs per tenant: pgx's statement cache
// would prepare it on every connection it meets (an extra round trip and
// Postgres memory per tenant) and rarely hit. The central statements
// (central) have one text each and keep the cache.
func (n named) tenant(name string, t db.Tenant, args sqlq.Args) (string, []any, error) {
	text, vals, err := n.Pgx(name, t.Quoted(), args)
	if err != nil {
		return "", nil, err
	}
	return text, append([]any{pgx.QueryExecModeSimpleProtocol}, vals...), nil
}

// central returns query name, on central tables only, as pgx runs it.
func (n named) central(name string, args sqlq.Args) (string, []any, error) {
	return n.Pgx(name, "", args)
}

// row is a tenant's sender_numbers row: a bun model (table, its alias s)
// and pgx's scan target (its db tags).
type row struct {
	bun.BaseModel `bun:"table:sender_numbers,alias:s" db:"-"`

	ID                 int64      `bun:"id,pk,autoincrement" db:"id"`
	Phone              string     `bun:"phone" db:"phone"`
	DisplayName        string     `bun:"display_name" db:"display_name"`
	Status             Status     `bun:"status" db:"status"`
	VerificationStatus string     `bun:"verification_status" db:"verification_status"`
	DailyLimitOverride *int       `bun:"daily_limit_override" db:"daily_limit_override"`
	OTPHash            []byte     `bun:"otp_hash" db:"otp_hash"`
	OTPExpiresAt       *time.Time `bun:"otp_expires_at" db:"otp_expires_at"`
	OTPAttempts        int        `bun:"otp_attempts" db:"otp_attempts"`
	OTPSentAt          *time.Time `bun:"otp_sent_at" db:"otp_sent_at"`
	OTPGeneration      int        `bun:"otp_generation" db:"otp_generation"`
	OTPIssuedAt        *time.Time `bun:"otp_issued_at" db:"otp_issued_at"`
	VerifiedAt         *time.Time `bun:"verified_at" db:"verified_at"`
	ActivatedAt        *time.Time `bun:"activated_at" db:"activated_at"`
	CreatedAt          time.Time  `bun:"created_at" db:"created_at"`
	UpdatedAt          time.Time  `bun:"updated_at" db:"updated_at"`
}

// table names t's sender_numbers for a bun query on the model row.
func table(t db.Tenant) (string, bun.Ident, bun.Ident) { return t.TableAs("sender_numbers", "s") }

// args are r's columns as the arguments of insert_row and save_row.
func (r *row) args() sqlq.Args {
	return sqlq.Args{
		"id": r.ID, "phone": r.Phone, "display_name": r.DisplayName, "status": string(r.Status),
		"verification_status": r.VerificationStatus, "daily_limit_override": r.DailyLimitOverride,
		"otp_hash": r.OTPHash, "otp_expires_at": r.OTPExpiresAt, "otp_attempts": r.OTPAttempts,
		"otp_sent_at": r.OTPSentAt, "otp_generation": r.OTPGeneration, "otp_issued_at": r.OTPIssuedAt,
		"verified_at": r.VerifiedAt, "activated_at": r.ActivatedAt,
		"created_at": r.CreatedAt, "updated_at": r.UpdatedAt,
	}
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

// lockRow reads number id in tx and locks it for update. A missing row is
// apperr.NotFound.
func (n named) lockRow(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (*row, error) {
	return n.readRow(ctx, tx, t, "lock_row", sqlq.Args{"id": id})
}

// findRow reads the number with id (when id > 0) or phone on q, without a
// lock: a send's sender (Resolve). A missing row is apperr.NotFound.
func (n named) findRow(ctx context.Context, q querier, t db.Tenant, id int64, phone string) (*row, error) {
	if id > 0 {
		return n.readRow(ctx, q, t, "row_by_id", sqlq.Args{"id": id})
	}
	return n.readRow(ctx, q, t, "row_by_phone", sqlq.Args{"phone": phone})
}

// readRow runs query name, which reads one sender number.
func (n named) readRow(ctx context.Context, q querier, t db.Tenant, name string, args sqlq.Args) (*row, error) {
	text, vals, err := n.tenant(name, t, args)
	if err != nil {
		return nil, fmt.Errorf("load sender number: %w", err)
	}
	rows, err := q.Query(ctx, text, vals...)
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

// getRow reads number id on bun (no lock: a read outside the service's
// transactions). A missing row is apperr.NotFound.
func getRow(ctx context.Context, idb bun.IDB, t db.Tenant, id int64) (*row, error) {
	r := new(row)
	err := idb.NewSelect().Model(r).ModelTableExpr(table(t)).Where("s.id = ?", id).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, apperr.NotFound("sender number")
	case err != nil:
		return nil, fmt.Errorf("load sender number: %w", err)
	}
	return r, nil
}

// saveRow writes r back in tx, which holds it (lockRow, or insertRow):
// every column that may change, those r's change left alone as they were
// read. updated_at increases at every save (a microsecond past the last
// one when the clock has not moved, as a fake clock does not): the
// directory keeps the entry of the latest one (dirUpsert).
func (n named) saveRow(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row, now time.Time) error {
	r.UpdatedAt = nextUpdate(r.UpdatedAt, now)
	text, vals, err := n.tenant("save_row", t, r.args())
	if err == nil {
		_, err = tx.Exec(ctx, text, vals...)
	}
	if err != nil {
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

// insertRow inserts r in tx and fills its id. A phone already registered
// in the organization is a unique violation (db.IsUniqueViolation).
func (n named) insertRow(ctx context.Context, tx pgx.Tx, t db.Tenant, r *row) error {
	text, vals, err := n.tenant("insert_row", t, r.args())
	if err != nil {
		return err
	}
	return tx.QueryRow(ctx, text, vals...).Scan(&r.ID)
}

// listRows returns every sender number of the tenant, newest first.
func listRows(ctx context.Context, idb bun.IDB, t db.Tenant) ([]row, error) {
	var out []row
	if err := idb.NewSelect().Model(&out).ModelTableExpr(table(t)).OrderExpr("s.id DESC").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list sender numbers: %w", err)
	}
	return out, nil
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
