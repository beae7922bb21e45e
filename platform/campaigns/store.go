package campaigns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
)

// queryer runs a statement: a transaction, or the pool.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// on is tx, or the pool when tx is nil.
func (s *Service) on(tx pgx.Tx) queryer {
	if tx != nil {
		return tx
	}
	return s.db.Pool
}

// sqlFor returns query with {campaigns}, {recipients}, {messages} and
// {senders} replaced by t's schema-qualified tables.
func sqlFor(t db.Tenant, query string) string {
	return strings.NewReplacer(
		"{campaigns}", t.Table("campaigns"),
		"{recipients}", t.Table("campaign_recipients"),
		"{messages}", t.Table("messages"),
		"{senders}", t.Table("sender_numbers"),
	).Replace(query)
}

// columns is the select list of scanCampaign, in the alias c.
const columns = `c.id, c.name, c.status, c.sender_number_ids, c.template_id, c.template_name, c.template_language,
	c.type, coalesce(c.content, ''), c.file_name, c.file_size, c.file_type, c.duration, c.send_at,
	c.reserve_percent, c.recipients, c.created_at, c.updated_at, c.started_at, c.paused_at, c.completed_at,
	c.canceled_at, c.release_gen`

// scanCampaign reads columns.
func scanCampaign(r pgx.CollectableRow) (Campaign, error) {
	var (
		c              Campaign
		status         string
		tplName, tplLn *string
	)
	err := r.Scan(&c.ID, &c.Name, &status, &c.SenderNumberIDs, &c.TemplateID, &tplName, &tplLn,
		&c.Body.Type, &c.Body.Content, &c.Body.FileName, &c.Body.FileSize, &c.Body.FileType, &c.Body.Duration,
		&c.SendAt, &c.ReservePercent, &c.Counts.Total, &c.CreatedAt, &c.UpdatedAt, &c.StartedAt, &c.PausedAt,
		&c.CompletedAt, &c.CanceledAt, &c.ReleaseGen)
	c.Status = Status(status)
	if tplName != nil && tplLn != nil {
		c.Template = &TemplateName{Name: *tplName, Language: *tplLn}
	}
	return c, err
}

// Statements of the campaign resource.
const (
	insertSQL = `INSERT INTO {campaigns} AS c
		(name, sender_number_ids, template_id, template_name, template_language, type, content, file_name,
		 file_size, file_type, duration, send_at, reserve_percent, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14)
		RETURNING ` + columns

	// loadSQL reads campaign $1; loadLockedSQL locks it for the
	// transaction (a change of state, an addition of recipients).
	loadSQL       = `SELECT ` + columns + ` FROM {campaigns} c WHERE c.id = $1`
	loadLockedSQL = loadSQL + ` FOR UPDATE`

	listSQL = `SELECT ` + columns + ` FROM {campaigns} c
		WHERE ($1::bigint = 0 OR c.id < $1) AND ($2::text = '' OR c.status = $2)
		ORDER BY c.id DESC LIMIT $3`

	// sendersSQL reads the statuses of the organization's sender numbers
	// among $1.
	sendersSQL = `SELECT s.id, s.status FROM {senders} s WHERE s.id = ANY($1::bigint[])`

	// recipientCountsSQL counts the recipients of campaigns $1 by stored
	// status and, for skipped ones, error_code; messageCountsSQL their
	// released recipients' messages by status (messages_campaign_status_idx).
	recipientCountsSQL = `SELECT r.campaign_id, r.status, coalesce(r.error_code, ''), count(*)
		FROM {recipients} r WHERE r.campaign_id = ANY($1::bigint[])
		GROUP BY r.campaign_id, r.status, r.error_code`
	messageCountsSQL = `SELECT m.campaign_id, m.status, count(*)
		FROM {messages} m WHERE m.campaign_id = ANY($1::bigint[])
		GROUP BY m.campaign_id, m.status`

	// addRecipientsSQL adds the recipients $2 (phones), $3 (variables as
	// JSON text), $4 (client references) to campaign $1 in their order,
	// each phone once: a phone the campaign has already is left as it is.
	// One statement a request.
	addRecipientsSQL = `INSERT INTO {recipients} (campaign_id, phone, variables, client_reference, updated_at)
		SELECT $1::bigint, r.phone, r.variables::jsonb, r.ref, $5::timestamptz
		  FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS r(phone, variables, ref, n)
		 ORDER BY r.n
		ON CONFLICT ON CONSTRAINT campaign_recipients_phone_key DO NOTHING`
	// countRecipientsSQL adds $2 to campaign $1's total.
	countRecipientsSQL = `UPDATE {campaigns} SET recipients = recipients + $2, updated_at = $3
		WHERE id = $1 RETURNING recipients`

	// listRecipientsSQL pages campaign $1's recipients, newest first,
	// with their public status: pending, skipped, or their message's.
	// $3 filters by that status ('' any).
	listRecipientsSQL = `SELECT r.id, r.phone, CASE WHEN r.status = 'released' THEN coalesce(m.status, 'queued') ELSE r.status END,
		r.message_id, r.sender_number_id, r.error_code, r.client_reference
		FROM {recipients} r LEFT JOIN {messages} m ON r.status = 'released' AND m.id = r.message_id
		WHERE r.campaign_id = $1 AND ($2::bigint = 0 OR r.id < $2)
		  AND ($3::text = '' OR r.status = $3 AND $3 IN ('pending', 'skipped')
		       OR r.status = 'released' AND m.status = $3)
		ORDER BY r.id DESC LIMIT $4`
)

// load reads campaign id in tx (on the pool when tx is nil; locked for
// the transaction when lock is set), without its counts. 404 when the
// organization has none.
func (s *Service) load(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, lock bool) (Campaign, error) {
	if id <= 0 {
		return Campaign{}, errNotFound()
	}
	q := loadSQL
	if lock {
		q = loadLockedSQL
	}
	rows, err := s.on(tx).Query(ctx, sqlFor(t, q), id)
	if err != nil {
		return Campaign{}, fmt.Errorf("read campaign %d: %w", id, err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCampaign)
	if errors.Is(err, pgx.ErrNoRows) {
		return Campaign{}, errNotFound()
	}
	if err != nil {
		return Campaign{}, fmt.Errorf("read campaign %d: %w", id, err)
	}
	return c, nil
}

// withCounts fills the counts and skip reasons of list (in place), in two
// statements whatever its length, read in tx (on the pool when nil).
func (s *Service) withCounts(ctx context.Context, tx pgx.Tx, t db.Tenant, list []Campaign) error {
	if len(list) == 0 {
		return nil
	}
	ids := make([]int64, len(list))
	at := make(map[int64]*Campaign, len(list))
	for i := range list {
		ids[i] = list[i].ID
		list[i].SkipReasons = map[string]int{}
		at[list[i].ID] = &list[i]
	}
	rows, err := s.on(tx).Query(ctx, sqlFor(t, recipientCountsSQL), ids)
	if err != nil {
		return fmt.Errorf("count recipients: %w", err)
	}
	var (
		id           int64
		status, code string
		n            int
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &status, &code, &n}, func() error {
		c := at[id]
		switch status {
		case RecipientPending:
			c.Counts.Pending += n
		case RecipientSkipped:
			c.Counts.Skipped += n
			c.SkipReasons[SkipReason(code)] += n
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count recipients: %w", err)
	}
	rows, err = s.on(tx).Query(ctx, sqlFor(t, messageCountsSQL), ids)
	if err != nil {
		return fmt.Errorf("count campaign messages: %w", err)
	}
	_, err = pgx.ForEachRow(rows, []any{&id, &status, &n}, func() error {
		c := at[id]
		switch status {
		case "queued":
			c.Counts.Queued += n
		case "sent":
			c.Counts.Sent += n
		case "delivered":
			c.Counts.Delivered += n
		case "read":
			c.Counts.Read += n
		case "failed":
			c.Counts.Failed += n
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("count campaign messages: %w", err)
	}
	return nil
}

func errNotFound() error { return apperr.NotFound("campaign") }
