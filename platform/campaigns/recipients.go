package campaigns

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/sqlq"
)

// Recipient is one recipient of a campaign as the API shows it.
type Recipient struct {
	ID    int64  `json:"-"`
	Phone string `json:"phone"`
	// Status is pending, skipped, or the status of its message once
	// released (queued, sent, delivered, read, failed).
	Status string `json:"status"`
	// MessageID is its message, once released.
	MessageID *int64 `json:"message_id"`
	// SenderNumberID is the sender number chosen at its release.
	SenderNumberID *int64 `json:"sender_number_id"`
	// ErrorCode says why it was skipped (a send check's code, or
	// campaign_canceled).
	ErrorCode       *string `json:"error_code"`
	ClientReference *string `json:"client_reference"`
}

// RecipientStatuses returns the public statuses of a recipient.
func RecipientStatuses() []string {
	return []string{RecipientPending, "queued", "sent", "delivered", "read", "failed", RecipientSkipped}
}

// RecipientQuery is the query of GET /campaigns/{id}/recipients.
type RecipientQuery struct {
	Status, Limit, Cursor string
}

// ListRecipients returns one page of campaign id's recipients, the last
// added first. Errors: 404; 422 naming a bad status, limit or cursor.
func (s *Service) ListRecipients(ctx context.Context, t db.Tenant, id int64, q RecipientQuery) (page.Of[Recipient], error) {
	var v apperr.Validation
	p := page.ParseInto(&v, q.Limit, q.Cursor)
	if q.Status != "" && !slices.Contains(RecipientStatuses(), q.Status) {
		v.Add("status", "must be one of pending, queued, sent, delivered, read, failed, skipped")
	}
	if _, err := s.load(ctx, nil, t, id, false); err != nil {
		return page.Of[Recipient]{}, err
	}
	if err := v.Err(); err != nil {
		return page.Of[Recipient]{}, err
	}
	rows, err := s.query(ctx, s.db.Pool, t, "list_recipients", sqlq.Args{"id": id, "after": p.After, "status": q.Status, "limit": p.Limit + 1})
	if err != nil {
		return page.Of[Recipient]{}, fmt.Errorf("list recipients of campaign %d: %w", id, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Recipient, error) {
		var x Recipient
		err := r.Scan(&x.ID, &x.Phone, &x.Status, &x.MessageID, &x.SenderNumberID, &x.ErrorCode, &x.ClientReference)
		return x, err
	})
	if err != nil {
		return page.Of[Recipient]{}, fmt.Errorf("list recipients of campaign %d: %w", id, err)
	}
	items, next := page.Cut(p, list, func(x Recipient) int64 { return x.ID })
	return page.Of[Recipient]{Items: items, NextCursor: next}, nil
}
