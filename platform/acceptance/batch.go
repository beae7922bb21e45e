package acceptance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"

	"github.com/bizmsg/platform/platform/messages"
)

// pendingSend is a send waiting for its tenant's next acceptance batch: the
// sender it names and its message, filled by the batch (id, sender).
type pendingSend struct {
	ref senders.SenderRef
	r   *messages.Row
}

// sendOutcome is a pending send's outcome: the answer, or the refusal.
type sendOutcome struct {
	res Result
	err error
}

// acceptBatch accepts the sends of tenant t that arrive while its earlier
// acceptances are in the database (a batch.Batcher run), in one statement
// (acceptBatchSQL) when there are several: one parse, one plan, one commit,
// and each sender's daily counter locked and raised once for all its
// messages instead of once per message. Concurrent sends of one sender
// otherwise queue on that counter's row lock, which each holds until its
// commit.
//
// Fewer than minBatch sends go through accept, the one-message statement,
// each on its own and at once. In a batch, a sender's messages are accepted
// together only when they all fit under its limit; otherwise, and for every
// message the batch did not accept (a sender error, a limit reached), accept
// decides again for that message on its own, so that the limit lets exactly
// its remaining places through, in the order of the batch, and each refusal
// is worded as a lone send's. So is every message of a batch whose statement
// the database refused for the data of one message (db.IsDataError).
//
// A send whose client goes away while its batch runs may still be stored,
// as when a lone send's commit races the disconnect; an Idempotency-Key
// (which never batches) makes the retry safe.
func (s *Service) acceptBatch(ctx context.Context, t db.Tenant, items []pendingSend) ([]sendOutcome, error) {
	out := make([]sendOutcome, len(items))
	alone := func(i int) {
		out[i].res, out[i].err = s.acceptAlone(ctx, t, items[i].ref, items[i].r)
	}
	if len(items) == 1 {
		alone(0)
		return out, nil
	}
	if len(items) < minBatch {
		var wg sync.WaitGroup
		for i := range items {
			wg.Go(func() { alone(i) })
		}
		wg.Wait()
		return out, nil
	}
	ok, err := s.acceptMany(ctx, t, items)
	if err != nil && !db.IsDataError(err) {
		return nil, err
	}
	for i, it := range items {
		if !ok[i] {
			alone(i)
			continue
		}
		out[i].res, out[i].err = render(it.r)
	}
	return out, nil
}

// minBatch is the smallest batch that runs as one statement, for
// acceptances and deliveries alike. Postgres plans a batch statement at
// every run (the simple protocol: its text names the tenant's schema), and
// that costs two to three times a one-message statement's plan
// (pg_stat_statements: acceptance 0.70 against 0.26 ms, claim 0.79 against
// 0.41, sent record 0.41 against 0.21; the network's batch statements about
// 0.3 ms each against a cached plan), so two or three messages gain nothing
// from sharing one statement, and would wait for each other. Fewer run as
// one-message statements side by side.
const minBatch = 4

// acceptMany runs acceptBatchSQL over items and River's insert of the
// accepted messages' jobs, in one transaction, and reports which were
// accepted, filling their rows' ids and senders.
func (s *Service) acceptMany(ctx context.Context, t db.Tenant, items []pendingSend) ([]bool, error) {
	var ok []bool
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		ok, err = s.acceptManyTx(ctx, tx, t, items)
		return err
	})
	if err != nil {
		return make([]bool, len(items)), err
	}
	return ok, nil
}

// acceptManyTx is acceptMany in tx.
func (s *Service) acceptManyTx(ctx context.Context, tx pgx.Tx, t db.Tenant, items []pendingSend) ([]bool, error) {
	n := len(items)
	var (
		senderIDs, sizes, recipients = make([]int64, n), make([]*int64, n), make([]*int64, n)
		phones, tos, types, contents = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		names, fileTypes, clientRefs = make([]*string, n), make([]*string, n), make([]*string, n)
		durations                    = make([]*int, n)
		created                      = make([]time.Time, n)
	)
	for i, it := range items {
		r := it.r
		senderIDs[i], phones[i] = it.ref.ID, it.ref.Phone
		tos[i], recipients[i], types[i], contents[i] = r.ToPhone, r.RecipientUserID, r.Type, r.Content
		names[i], sizes[i], fileTypes[i], durations[i] = r.FileName, r.FileSize, r.FileType, r.Duration
		clientRefs[i], created[i] = r.ClientReference, r.CreatedAt
	}
	type result struct {
		ord                 int64
		messageID, senderID *int64
	}
	if err := s.lockOptOuts(ctx, tx, t, tos...); err != nil {
		return make([]bool, n), err
	}
	var rows []result
	err := s.prep.Query(ctx, tx, acceptBatchSQL(t, s.cfg.ServiceWindow), []any{t.OrgID,
		senderIDs, phones, tos, recipients, types, contents, names, sizes, fileTypes, durations, clientRefs, created,
	}, func(r db.Rows) error {
		for r.Next() {
			var x result
			if err := r.Scan(&x.ord, &x.messageID, &x.senderID); err != nil {
				return err
			}
			rows = append(rows, x)
		}
		return nil
	})
	ok := make([]bool, n)
	if err != nil {
		return ok, fmt.Errorf("accept %d messages: %w", n, err)
	}
	accepted := make([]*messages.Row, 0, len(rows))
	for _, r := range rows {
		i := int(r.ord) - 1
		if i < 0 || i >= n || r.messageID == nil {
			continue
		}
		ok[i] = true
		items[i].r.ID, items[i].r.SenderNumberID = *r.messageID, *r.senderID
		accepted = append(accepted, items[i].r)
	}
	if len(accepted) > 0 {
		if err := s.enqueue(ctx, tx, t, accepted...); err != nil {
			return ok, err
		}
	}
	return ok, nil
}
