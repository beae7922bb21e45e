package messages

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
)

// acceptance is a send waiting for its tenant's next acceptance batch: the
// sender it names and its message, filled by the batch (id, sender).
type acceptance struct {
	ref senders.SenderRef
	r   *row
}

// accepted is an acceptance's outcome: the answer, or the refusal.
type accepted struct {
	res SendResult
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
func (s *Service) acceptBatch(ctx context.Context, t db.Tenant, items []acceptance) ([]accepted, error) {
	out := make([]accepted, len(items))
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
func (s *Service) acceptMany(ctx context.Context, t db.Tenant, items []acceptance) ([]bool, error) {
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
func (s *Service) acceptManyTx(ctx context.Context, tx pgx.Tx, t db.Tenant, items []acceptance) ([]bool, error) {
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
	var rows []result
	err := s.prep.Query(ctx, tx, acceptBatchSQL(t), []any{t.OrgID,
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
	accepted := make([]*row, 0, len(rows))
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

// acceptBatchSQL is acceptSQL of tenant t for several messages at once, with
// $n arguments for db.Prepared, the i-th element of each array $2..$13 being
// the i-th message: sender id $2 (0 when named by phone), sender phone $3
// ("" when named by id; when both are given they must name one number),
// recipient $4, recipient's user id $5, type $6, content $7, file name $8,
// size $9, file type $10, duration $11, client reference $12 and
// acceptance time $13 (its UTC day is the day whose limit it counts
// against). Durations are bigint, so that a value past the integer column
// is the database's data error (which makes the batch fall back), not the
// driver's when it encodes a prepared statement's argument. $1 is the
// organization; the messages' id sequence is named in
// the text (a constant, so that the name is resolved once per statement, not
// once per row).
//
//   - i: the messages, each with its ordinal and a message id drawn from
//     the table's sequence in that order;
//   - s, ok: each message's sender, and those that may send (as acceptSQL);
//   - want: per sender and day, its messages in the batch;
//   - u: the daily-limit reservation, per sender and day all its messages
//     or none: the counter goes up by their number only while it stays
//     within the limit. Counters ('accept' rows) are locked in sender and
//     day order, so concurrent batches cannot deadlock;
//   - m: the messages of the counters u reserved for (their delivery jobs
//     are inserted by River in the same transaction, acceptMany).
//
// It returns, per message, its ordinal and, when accepted, its id and
// sender.
func acceptBatchSQL(t db.Tenant) string {
	sc := t.Quoted()
	seq := "'" + strings.ReplaceAll(t.Table("messages_id_seq"), "'", "''") + "'::regclass"
	return `WITH i AS (
		  SELECT nextval(` + seq + `) AS id, (x.created_at AT TIME ZONE 'UTC')::date AS day, x.*
		    FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
		                $8::text[], $9::bigint[], $10::text[], $11::bigint[], $12::text[],
		                $13::timestamptz[]) WITH ORDINALITY
		         AS x(sender_id, sender_phone, to_phone, recipient_user_id, type, content,
		              file_name, file_size, file_type, duration, client_reference, created_at, ord)
		   ORDER BY x.ord),
		s AS (
		  SELECT i.id AS mid, i.day, i.sender_phone, s.id, s.phone, s.status,
		         coalesce(s.daily_limit_override, o.default_daily_limit) AS lim
		    FROM i
		    JOIN ` + sc + `.sender_numbers s ON s.id = CASE WHEN i.sender_id > 0 THEN i.sender_id
		         ELSE (SELECT x.id FROM ` + sc + `.sender_numbers x WHERE x.phone = i.sender_phone) END
		    JOIN central.organizations o ON o.id = $1::bigint),
		ok AS (
		  SELECT mid, day, id, lim FROM s
		   WHERE status = 'active' AND (sender_phone = '' OR phone = sender_phone) AND lim >= 1),
		want AS (
		  SELECT id, day, min(lim) AS lim, count(*) AS n FROM ok GROUP BY id, day),
		u AS (
		  INSERT INTO ` + sc + `.daily_usage AS u (sender_number_id, day, side, used)
		  SELECT id, day, 'accept', n FROM want WHERE n <= lim ORDER BY id, day
		  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET used = u.used + EXCLUDED.used
		   WHERE u.used + EXCLUDED.used <=
		         (SELECT w.lim FROM want w WHERE w.id = u.sender_number_id AND w.day = u.day)
		  RETURNING u.sender_number_id, u.day),
		m AS (
		  INSERT INTO ` + sc + `.messages (id, sender_number_id, to_phone, recipient_user_id, type, content,
		         file_name, file_size, file_type, duration, status, client_reference, created_at, updated_at)
		  SELECT i.id, ok.id, i.to_phone, i.recipient_user_id, i.type, i.content, i.file_name, i.file_size,
		         i.file_type, i.duration, 'queued', i.client_reference, i.created_at, i.created_at
		    FROM i JOIN ok ON ok.mid = i.id JOIN u ON u.sender_number_id = ok.id AND u.day = ok.day
		   ORDER BY i.id
		  RETURNING id AS message_id, sender_number_id AS sender_id)
		SELECT i.ord, m.message_id, m.sender_id FROM i LEFT JOIN m ON m.message_id = i.id`
}
