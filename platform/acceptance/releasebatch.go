package acceptance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/sqlq"
)

// pendingRelease is a scheduled message waiting for its tenant's next
// release batch, and whether its job runs its last attempt.
type pendingRelease struct {
	id   int64
	last bool
}

// releaseBatch releases the scheduled messages of tenant t whose jobs run
// while its earlier releases are in the database (a batch.Batcher run), as
// releaseAlone would each, sharing what they can: one read of the messages,
// the checks side by side (outside any transaction), and one transaction
// that runs the acceptance statement's release variant for each checked
// message, in sender order (the order in which the API's batches and the
// campaigns' ticks lock the senders' day counters, so that none of them
// deadlock), and inserts the delivery jobs of those accepted together. One
// commit, one insert of jobs and one notification stand for many.
//
// Each message keeps its own outcome: a refusal (at the check or in the
// statement) fails that message alone, with its code, after the commit;
// a transient error of its check is its own job's to retry. Exactly once
// holds as alone: the statement changes a message only while it is
// scheduled, under its row lock, which the transaction holds to its
// commit. When the transaction fails, each message it held is released
// alone, so that one message's fault is not its neighbours'.
func (s *Service) releaseBatch(ctx context.Context, t db.Tenant, items []pendingRelease) ([]outcome[string], error) {
	out := make([]outcome[string], len(items))
	if len(items) == 1 {
		out[0].val, out[0].err = s.releaseAlone(ctx, t, items[0].id, items[0].last)
		return out, nil
	}
	rows, err := s.readScheduled(ctx, t, items)
	if err != nil {
		return nil, err
	}
	// first is the index of each message's first item: a message named
	// twice (a job and its rescued run) is released once, and both are
	// answered alike.
	first := make(map[int64]int, len(items))
	checks := make([]error, len(items))
	checked := make([]*Checked, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		if _, dup := first[it.id]; dup {
			continue
		}
		first[it.id] = i
		r, ok := rows[it.id]
		switch {
		case !ok: // no such message: nothing to release
		case r.Status != messages.StatusScheduled:
			out[i].val = r.Status
		default:
			wg.Go(func() { checked[i], checks[i] = s.checkScheduled(ctx, t, r) })
		}
	}
	wg.Wait()

	order := make([]int, 0, len(items))
	for i, c := range checked {
		if c != nil {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		ra, rb := &checked[a].row, &checked[b].row
		return cmp.Or(cmp.Compare(ra.SenderNumberID, rb.SenderNumberID), cmp.Compare(ra.ID, rb.ID))
	})
	released := make([]error, len(items))
	phones := make([]string, len(order))
	for k, i := range order {
		phones[k] = checked[i].row.ToPhone
	}
	err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
		org, err := s.counters.ReadLimits(ctx, tx, t.OrgID)
		if err != nil {
			return err
		}
		if err := s.lockOptOuts(ctx, tx, t, phones...); err != nil {
			return err
		}
		accepted := make([]*messages.Row, 0, len(order))
		for _, i := range order {
			err := s.acceptChecked(ctx, tx, t, org.DefaultDailyLimit, checked[i])
			_, refused := Refusal(err)
			switch {
			case err == nil:
				accepted = append(accepted, &checked[i].row)
			case refused, errors.Is(err, ErrNotScheduled):
			default:
				return err
			}
			released[i] = err
		}
		if len(accepted) == 0 {
			return nil
		}
		return s.enqueue(ctx, tx, t, accepted...)
	})
	if err != nil {
		// Each checked message again on its own: its own read, check and
		// transaction, and its own error.
		for _, i := range order {
			checked[i] = nil
			wg.Go(func() { out[i].val, out[i].err = s.releaseAlone(ctx, t, items[i].id, items[i].last) })
		}
	}
	for i, it := range items {
		switch {
		case first[it.id] != i:
		case checks[i] != nil:
			wg.Go(func() { out[i].val, out[i].err = s.settle(ctx, t, it.id, it.last, checks[i]) })
		case checked[i] != nil:
			wg.Go(func() { out[i].val, out[i].err = s.settle(ctx, t, it.id, it.last, released[i]) })
		}
	}
	wg.Wait()
	for i, it := range items {
		if j := first[it.id]; j != i {
			out[i] = out[j]
		}
	}
	return out, nil
}

// readScheduled reads the messages of items, by id, in one statement.
func (s *Service) readScheduled(ctx context.Context, t db.Tenant, items []pendingRelease) (map[int64]*messages.Row, error) {
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	rows := make(map[int64]*messages.Row, len(items))
	err := s.queryNamed(ctx, nil, t, "scheduled_many", sqlq.Args{"ids": ids}, func(r db.Rows) error {
		for r.Next() {
			var row messages.Row
			if err := r.Scan(row.ScanDest()...); err != nil {
				return err
			}
			rows[row.ID] = &row
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %d scheduled messages: %w", len(ids), err)
	}
	return rows, nil
}
