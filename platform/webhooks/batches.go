package webhooks

import (
	"context"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/sqlq"
)

// An attempt reads its delivery before the request and records a success
// after it. Under a backlog a process runs many attempts of one
// organization at once (Config.Batch), and each of those reads and records
// was a statement of its own, the record a commit of its own: the
// attempts' bookkeeping cost the database about as much as the sends whose
// events they deliver. The attempts of one tenant that read, or record a
// success, at the same time now share one statement (batch.Batcher, as the
// send path's acceptances and deliveries do); an attempt that runs alone
// still runs its statement at once (docs/design.md, §Webhooks).

// loadItem is one attempt's read: delivery id, with the attempt's clock.
type loadItem struct {
	id  int64
	now time.Time
}

// loaded is the read of one loadItem: found is false when the delivery no
// longer exists.
type loaded struct {
	row   attemptRow
	found bool
}

// loadMany reads the deliveries of items with their events and endpoints,
// and for each the earliest pending delivery of its key to its endpoint
// before it that is not stale at its item's clock, in one statement.
func (s *Service) loadMany(ctx context.Context, t db.Tenant, items []loadItem) ([]loaded, error) {
	ids := make([]int64, len(items))
	staleBefore := make([]time.Time, len(items))
	for i, it := range items {
		ids[i] = it.id
		staleBefore[i] = it.now.Add(-s.cfg.RetryFor - staleAfter)
	}
	type found struct {
		row              attemptRow
		secret, previous string
		previousUntil    *time.Time
		blockedBy        *int64
		blockedUntil     *time.Time
		body             string
	}
	byItem := make(map[int]*found, len(items))
	err := s.query(ctx, nil, t, "load_attempts", sqlq.Args{"ids": ids, "stale_before": staleBefore}, func(r db.Rows) error {
		for r.Next() {
			var (
				n int
				f found
			)
			if err := r.Scan(&n, &f.row.endpointID, &f.row.key, &f.row.state, &f.row.createdAt,
				&f.row.eventID, &f.body, &f.row.url, &f.row.enabled, &f.secret, &f.previous, &f.previousUntil,
				&f.blockedBy, &f.blockedUntil); err != nil {
				return err
			}
			byItem[n-1] = &f
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]loaded, len(items))
	for i, it := range items {
		f := byItem[i]
		if f == nil {
			continue
		}
		d := f.row
		d.id = it.id
		d.body = []byte(f.body)
		d.secrets = []string{f.secret}
		if f.previous != "" && f.previousUntil != nil && it.now.Before(*f.previousUntil) {
			d.secrets = append(d.secrets, f.previous)
		}
		if f.blockedBy != nil {
			d.blockedBy = *f.blockedBy
			if f.blockedUntil != nil {
				d.blockedUntil = *f.blockedUntil
			}
		}
		out[i] = loaded{row: d, found: true}
	}
	return out, nil
}

// success is one attempt's successful answer, to record.
type success struct {
	id        int64
	status    int
	latencyMS int
	at        time.Time
}

// recordSuccesses marks the deliveries of items succeeded (those still
// pending) and ends their endpoints' failure streaks, in one statement.
func (s *Service) recordSuccesses(ctx context.Context, t db.Tenant, items []success) ([]struct{}, error) {
	ids := make([]int64, len(items))
	statuses := make([]int32, len(items))
	latencies := make([]int32, len(items))
	ats := make([]time.Time, len(items))
	for i, it := range items {
		ids[i], statuses[i], latencies[i], ats[i] = it.id, int32(it.status), int32(it.latencyMS), it.at
	}
	if err := s.exec(ctx, nil, t, "record_successes", sqlq.Args{
		"ids": ids, "statuses": statuses, "latencies": latencies, "ats": ats,
	}); err != nil {
		return nil, err
	}
	return make([]struct{}, len(items)), nil
}
