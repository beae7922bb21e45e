package acceptance

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"

	"github.com/bizmsg/platform/platform/messages"
)

// pendingSend is a send waiting for its tenant's next acceptance batch: the
// sender it names and its message, filled by the batch (id, sender).
type pendingSend struct {
	ref senders.SenderRef
	r   *messages.Row
	// limit is the organization's default daily limit as the send's
	// request read it.
	limit int
}

// outcome is the answer of one item of a batch (acceptBatch,
// releaseBatch): its value, or the error that fails that item alone.
type outcome[T any] struct {
	val T
	err error
}

// acceptBatch accepts the sends of tenant t that arrive while its earlier
// acceptances are in the database (a batch.Batcher run), in one statement
// (accept_batch) when there are several: one parse, one plan, one commit,
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
func (s *Service) acceptBatch(ctx context.Context, t db.Tenant, items []pendingSend) ([]outcome[Result], error) {
	out := make([]outcome[Result], len(items))
	alone := func(i int) {
		out[i].val, out[i].err = s.acceptAlone(ctx, t, items[i].limit, items[i].ref, items[i].r)
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
		out[i].val, out[i].err = render(it.r)
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

// acceptMany runs accept_batch over items, the insert of the accepted
// messages and the outbox's insert of their jobs, in one transaction, and
// reports which were accepted, filling their rows' ids and senders.
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

// batchRow is accept_batch's answer for one message.
type batchRow struct {
	ord               int64
	senderID          *int64
	accepted, missing bool
}

// acceptManyTx is acceptMany in tx: the opt-out locks, the counters
// (accept_batch, run again once the missing ones exist), then the
// accepted messages (insert_batch) and their jobs.
func (s *Service) acceptManyTx(ctx context.Context, tx pgx.Tx, t db.Tenant, items []pendingSend) ([]bool, error) {
	n := len(items)
	var (
		senderIDs, limits = make([]int64, n), make([]int32, n)
		phones            = make([]string, n)
		rows              = make([]*messages.Row, n)
	)
	for i, it := range items {
		senderIDs[i], phones[i], limits[i], rows[i] = it.ref.ID, it.ref.Phone, int32(it.limit), it.r
	}
	cols := columnsOf(rows)
	ok := make([]bool, n)
	q, args, err := s.q.Pgx(batchName(s.cfg.ServiceWindow > 0), t.Quoted(), sqlq.Args{"sender_ids": senderIDs,
		"sender_phones": phones, "to_phones": cols.tos, "types": cols.types, "created": cols.created, "limits": limits,
		"window_secs": s.windowSecs})
	if err != nil {
		return ok, fmt.Errorf("accept %d messages: %w", n, err)
	}
	if err := s.lockOptOuts(ctx, tx, t, cols.tos...); err != nil {
		return ok, err
	}
	var answers []batchRow
	for try := 0; ; try++ {
		answers = answers[:0]
		err := s.prep.Query(ctx, tx, q, args, func(r db.Rows) error {
			for r.Next() {
				var x batchRow
				if err := r.Scan(&x.ord, &x.senderID, &x.accepted, &x.missing); err != nil {
					return err
				}
				answers = append(answers, x)
			}
			return nil
		})
		if err != nil {
			return ok, fmt.Errorf("accept %d messages: %w", n, err)
		}
		var sids []int64
		var days []string
		for _, x := range answers {
			if x.missing && x.senderID != nil && x.ord >= 1 && int(x.ord) <= n {
				sids, days = append(sids, *x.senderID), append(days, messages.Day(cols.created[x.ord-1]))
			}
		}
		if len(sids) == 0 {
			break
		}
		if try > 0 {
			return ok, fmt.Errorf("accept %d messages: %d daily counters missing after their creation", n, len(sids))
		}
		if err := s.createCounters(ctx, tx, t, sids, days); err != nil {
			return ok, err
		}
	}
	for _, x := range answers {
		i := int(x.ord) - 1
		if i < 0 || i >= n || !x.accepted || x.senderID == nil {
			continue
		}
		ok[i] = true
		rows[i].SenderNumberID = *x.senderID
	}
	// In the batch's order: the order of their ids.
	accepted := make([]*messages.Row, 0, n)
	for i, r := range rows {
		if ok[i] {
			accepted = append(accepted, r)
		}
	}
	if len(accepted) == 0 {
		return ok, nil
	}
	if err := s.insertAccepted(ctx, tx, t, accepted); err != nil {
		return ok, err
	}
	if err := s.enqueue(ctx, tx, t, accepted...); err != nil {
		return ok, err
	}
	return ok, nil
}

// columns are messages' columns as arrays, the i-th element of each the
// i-th message's, for the batch statements.
type columns struct {
	senders                      []int64
	sizes, recipients            []*int64
	tos, types, contents         []string
	names, fileTypes, clientRefs []*string
	durations                    []*int
	created                      []time.Time
}

// columnsOf are rows' columns (their senders as the rows hold them).
func columnsOf(rows []*messages.Row) columns {
	n := len(rows)
	c := columns{
		senders: make([]int64, n), sizes: make([]*int64, n), recipients: make([]*int64, n),
		tos: make([]string, n), types: make([]string, n), contents: make([]string, n),
		names: make([]*string, n), fileTypes: make([]*string, n), clientRefs: make([]*string, n),
		durations: make([]*int, n), created: make([]time.Time, n),
	}
	for i, r := range rows {
		c.senders[i], c.recipients[i] = r.SenderNumberID, r.RecipientUserID
		c.tos[i], c.types[i], c.contents[i] = r.ToPhone, r.Type, r.Content
		c.names[i], c.sizes[i], c.fileTypes[i], c.durations[i] = r.FileName, r.FileSize, r.FileType, r.Duration
		c.clientRefs[i], c.created[i] = r.ClientReference, r.CreatedAt
	}
	return c
}

// insertAccepted inserts the accepted messages rows of a batch, queued
// (insert_batch), in the batch's order, and fills their ids.
func (s *Service) insertAccepted(ctx context.Context, tx pgx.Tx, t db.Tenant, rows []*messages.Row) error {
	n := len(rows)
	c := columnsOf(rows)
	ids := make([]int64, 0, n)
	err := s.queryNamed(ctx, tx, t, "insert_batch", sqlq.Args{"senders": c.senders, "to_phones": c.tos,
		"recipient_user_ids": c.recipients, "types": c.types, "contents": c.contents, "file_names": c.names,
		"file_sizes": c.sizes, "file_types": c.fileTypes, "durations": c.durations, "client_references": c.clientRefs,
		"created": c.created}, db.Int64s(&ids))
	if err == nil && len(ids) != n {
		err = fmt.Errorf("%d ids returned", len(ids))
	}
	if err != nil {
		return fmt.Errorf("insert %d accepted messages: %w", n, err)
	}
	slices.Sort(ids)
	for i, r := range rows {
		r.ID = ids[i]
	}
	return nil
}
