package campaigns

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// on is tx, or the pool when tx is nil.
func (s *Service) on(tx pgx.Tx) db.Querier {
	if tx != nil {
		return tx
	}
	return s.db.Pool
}

//go:embed queries/*.sql queries/fragments/*.sql
var queries embed.FS

// query runs named query name of tenant t (queries/, written for pgx by
// sqlq's Pgx) with args on q.
func (s *Service) query(ctx context.Context, q db.Querier, t db.Tenant, name string, args sqlq.Args) (pgx.Rows, error) {
	return db.QueryNamed(ctx, q, s.q, name, t.Quoted(), args)
}

// scanCampaign reads the columns of a campaign (the fragment
// campaign_columns).
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

// load reads campaign id in tx (on the pool when tx is nil; locked for
// the transaction when lock is set), without its counts. 404 when the
// organization has none.
func (s *Service) load(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, lock bool) (Campaign, error) {
	if id <= 0 {
		return Campaign{}, errNotFound()
	}
	name := "load_campaign"
	if lock {
		name = "load_campaign_locked"
	}
	rows, err := s.query(ctx, s.on(tx), t, name, sqlq.Args{"id": id})
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
	rows, err := s.query(ctx, s.on(tx), t, "recipient_counts", sqlq.Args{"ids": ids})
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
	rows, err = s.query(ctx, s.on(tx), t, "message_counts", sqlq.Args{"ids": ids})
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
