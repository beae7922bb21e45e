package campaigns

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/webhooks"
)

// What the release (package campaignrelease) needs of the resource: the
// campaign locked in its transaction, and its completion.

// NextReleaseGen raises campaign id's release generation in tx and returns
// the new one, which the release job queued in tx carries: every job of an
// older generation ends at its next tick (Campaign.ReleaseGen).
func (s *Service) NextReleaseGen(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (int64, error) {
	var gen int64
	rows, err := s.query(ctx, tx, t, "next_release_gen", sqlq.Args{"id": id})
	if err == nil {
		gen, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	}
	if err != nil {
		return 0, fmt.Errorf("raise the release generation of campaign %d: %w", id, err)
	}
	return gen, nil
}

// Lock reads campaign id in tx, locked FOR UPDATE to tx's end (without
// its counts): a release tick's first step, serialised with pause, resume
// and cancel. 404 when the organization has none.
func (s *Service) Lock(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (Campaign, error) {
	return s.load(ctx, tx, t, id, true)
}

// Complete turns running campaign id completed in tx, emitting
// campaign.completed with its final counts, and reports whether it did.
// The release calls it once no recipient is pending and none of the
// campaign's messages is still queued.
func (s *Service) Complete(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (bool, error) {
	rows, err := s.query(ctx, tx, t, "complete", sqlq.Args{"id": id, "now": s.clock.Now()})
	if err != nil {
		return false, fmt.Errorf("complete campaign %d: %w", id, err)
	}
	list, err := pgx.CollectRows(rows, scanCampaign)
	if err != nil || len(list) == 0 {
		return false, err
	}
	if s.events == nil {
		return true, nil
	}
	if err := s.withCounts(ctx, tx, t, list); err != nil {
		return false, err
	}
	c := list[0]
	return true, s.events.Emit(ctx, tx, t, webhooks.Event{
		Type: webhooks.EventCampaignCompleted, Key: fmt.Sprintf("campaign:%d", c.ID), Data: c, At: *c.CompletedAt,
	})
}
