package messages

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/throttle"
	"github.com/bizmsg/platform/platform/webhooks"
)

// DeliverMessage delivers the message of a delivery job (jobs.MessageDeliverer):
//
//  1. it reserves a token of the sender's bucket and waits for it (up to
//     MaxInlineWait) or asks to be snoozed for exactly the delay; the snoozed
//     run finds its token reserved under the job's ticket. The bucket's limit
//     is the one the sender's last delivery read (senderCache); a job without
//     a sender id, or the first delivery of a sender in this process, reads
//     the message first (loadDelivery) to learn it;
//  2. it joins the tenant's next delivery batch (Config.DeliveryBatch): the
//     jobs of a tenant past their throttle at the same time are claimed,
//     delivered and recorded together (deliverBatch), so that a busy worker
//     spends a few statements per batch rather than per message. Alone, a
//     job runs at once in a batch of its own;
//  3. the batch decides, under lock, whether the message waits for an
//     earlier message of its conversation (its sender number and recipient)
//     that is still queued (order.go). When a job of that message runs in
//     this process (flights), the run waits for it to end and claims again,
//     as long as its inline wait (Config.MaxInlineWait, the throttle's
//     included) lasts; otherwise the job snoozes for Config.OrderWait,
//     keeping the token it took for its next run in this process
//     (heldTokens). A message that does not wait claims, on its
//     first run past the throttle, its place under the sender's current
//     daily limit for the day it was accepted, or is failed
//     (daily_limit_exceeded, sender_not_active) undelivered; a message
//     already sent or failed is done (claimMany, claimLocked);
//  4. it delivers with the reference "<schema>:<id>" and records the
//     outcome: sent with the network's ids, or failed with the network's
//     refusal code; a transient failure is returned for River to retry,
//     except on the last attempt, which fails the message with
//     network_error.
func (s *Service) DeliverMessage(ctx context.Context, args queue.DeliverArgs, at queue.DeliveryAttempt) (time.Duration, error) {
	t, err := db.NewTenant(args.OrgID, args.Schema)
	if err != nil {
		return 0, &network.PermanentError{Code: network.CodeInvalidMessage, Message: err.Error()}
	}
	end := s.flights.start(flightKey{t.Schema, args.MessageID})
	defer end()
	senderID := args.SenderID
	limit, known := s.known.limit(t, senderID)
	if senderID == 0 || !known {
		m, _, org, err := s.loadDelivery(ctx, t, args.MessageID)
		if err != nil {
			return 0, missing(t, args.MessageID, err)
		}
		if m.Status != StatusQueued {
			return 0, nil
		}
		senderID, limit = m.SenderNumberID, s.limitOf(org)
		s.known.putLimit(t, senderID, limit)
	}

	key := throttleKey(t, senderID)
	var delay time.Duration
	began := time.Now()
	if !s.held.take(at.Ticket(), began) {
		if delay, err = s.throttle.Reserve(ctx, key, at.Ticket(), limit); err != nil {
			return 0, fmt.Errorf("throttle: %w", err)
		}
		if delay > s.cfg.MaxInlineWait {
			return delay, nil
		}
		if delay > 0 && !sleep(ctx, delay) {
			return 0, ctx.Err()
		}
	}

	for {
		errItem, err := s.deliveries.Do(ctx, t, pendingDelivery{id: args.MessageID, at: at})
		if err != nil {
			return 0, err
		}
		w := (*orderWaitError)(nil)
		if !errors.As(errItem, &w) {
			return 0, errItem
		}
		if !s.flights.park(ctx, flightKey{t.Schema, w.blocker}, began.Add(s.cfg.MaxInlineWait)) {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			s.held.keep(at.Ticket(), key, limit.Burst, time.Now())
			return s.cfg.OrderWait, nil
		}
	}
}

// sleep waits for d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pendingDelivery is a delivery job past its throttle, waiting for its
// tenant's next delivery batch.
type pendingDelivery struct {
	id int64
	at queue.DeliveryAttempt
}

// sentMessage is a message the network delivered, to record.
type sentMessage struct {
	id int64
	d  network.Delivery
	// delivered: the network confirms that the recipient has the message
	// (at d.DeliveredAt), so the record makes it delivered, not sent.
	delivered bool
	item      int // its index in the batch
}

// deliverBatch delivers the messages of tenant t's delivery jobs that are
// past their throttle at the same time (a batch.Batcher run), and returns
// each job's outcome (DeliverMessage's error), in order:
//
//   - claimMany locks and reads the messages and claims their places under
//     their senders' daily limits in one statement; claimLocked decides,
//     in a transaction, the few it leaves (a limit reached, a sender no
//     longer active). A message with an earlier message of its
//     conversation still queued outside the batch waits (orderWaitError);
//   - the network delivers the claimed ones (network.DeliverAll: one batch
//     where the network offers it), each with its reference
//     "<schema>:<id>", so that a delivery the network already made (a crash
//     before the outcome was recorded) is returned again, not repeated. The
//     messages of one conversation go in rounds, one per round in id order:
//     a round delivers the first of every conversation, and the next one
//     the following message of each conversation whose message left queued
//     (delivered, or failed); behind a transient failure the rest of its
//     conversation waits (orderWaitError). A batch whose conversations are
//     all different is one round;
//   - markSent records every delivery in one statement. A refusal fails its
//     message with the network's code; a transient failure is that job's
//     error, for River to retry, except on its last attempt, which fails
//     the message with network_error.
//
// Two jobs of one message in a batch (a rescued job and the original) share
// one delivery and its outcome. Fewer than minBatch jobs are delivered each
// on its own, side by side, with the one-message statements; of two messages
// of one conversation there, the later one's claim finds the earlier one
// queued and waits.
func (s *Service) deliverBatch(ctx context.Context, t db.Tenant, items []pendingDelivery) ([]error, error) {
	if n := len(items); n > 1 && n < minBatch {
		// Too few to pay for the batch statements: each on its own, at once.
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range items {
			wg.Go(func() {
				one, err := s.deliverBatch(ctx, t, items[i:i+1])
				if err == nil {
					err = one[0]
				}
				errs[i] = err
			})
		}
		wg.Wait()
		return errs, nil
	}
	first := make(map[int64]int, len(items))
	ids := make([]int64, 0, len(items))
	for i, it := range items {
		if _, dup := first[it.id]; !dup {
			first[it.id] = i
			ids = append(ids, it.id)
		}
	}
	claims, undecided, err := s.claimMany(ctx, t, ids)
	if err != nil {
		return nil, err
	}
	if len(undecided) > 0 {
		decided, err := s.claimLocked(ctx, t, undecided, ids)
		if err != nil {
			return nil, err
		}
		maps.Copy(claims, decided)
	}

	// The messages that proceed, per conversation in id order: each round
	// delivers the first of every conversation, and the next round the
	// following one of each conversation whose first left queued.
	errs := make([]error, len(items))
	lines := make(map[conversation][]int64)
	var order []conversation
	for _, id := range ids {
		c, found := claims[id]
		switch {
		case !found:
			errs[first[id]] = missing(t, id, apperr.NotFound("message"))
		case c.blocker != 0:
			errs[first[id]] = &orderWaitError{blocker: c.blocker}
		case c.proceed:
			k := conversation{c.m.SenderNumberID, c.m.ToPhone}
			if _, seen := lines[k]; !seen {
				order = append(order, k)
			}
			lines[k] = append(lines[k], id)
		}
	}
	for _, k := range order {
		slices.Sort(lines[k])
	}

	sent := make([]sentMessage, 0, len(ids))
	for len(order) > 0 {
		msgs := make([]network.Message, len(order))
		for j, k := range order {
			c := claims[lines[k][0]]
			msgs[j] = networkMessage(t, c.m, c.phone)
		}
		var next []conversation
		for j, r := range network.DeliverAll(ctx, s.net, msgs, len(msgs)) {
			k := order[j]
			id, later := lines[k][0], lines[k][1:]
			i := first[id]
			rec, done, err := s.outcome(ctx, t, items[i], i, r)
			if rec != nil {
				sent = append(sent, *rec)
			}
			errs[i] = err
			switch {
			case len(later) == 0:
			case !done:
				for _, l := range later {
					errs[first[l]] = &orderWaitError{blocker: id}
				}
			default:
				lines[k] = later
				next = append(next, k)
			}
		}
		order = next
	}
	if err := s.markSent(ctx, t, sent); err != nil {
		for _, m := range sent {
			errs[m.item] = err
		}
	}
	for i, it := range items {
		errs[i] = errs[first[it.id]]
	}
	return errs, nil
}

// networkMessage is message m as the network delivers it, from the sender's
// phone.
func networkMessage(t db.Tenant, m *row, phone string) network.Message {
	return network.Message{
		Reference: Reference(t, m.ID),
		FromPhone: phone,
		ToPhone:   m.ToPhone,
		Type:      m.Type,
		Content:   m.Content,
		FileName:  deref(m.FileName),
		FileSize:  deref(m.FileSize),
		FileType:  deref(m.FileType),
		Duration:  deref(m.Duration),
	}
}

// outcome handles the network's result r for the message of it (the batch's
// item i): a delivery is returned, to record; a refusal fails the message; a
// transient failure is the job's error, and on its last attempt fails the
// message with network_error as well. done reports whether the message is
// no longer queued (sent to record, or failed now), so that the later
// messages of its conversation may follow it.
func (s *Service) outcome(ctx context.Context, t db.Tenant, it pendingDelivery, i int, r network.Result) (rec *sentMessage, done bool, err error) {
	id, at := it.id, it.at
	var refusal *network.PermanentError
	switch {
	case errors.As(r.Err, &refusal):
		err = s.fail(ctx, nil, t, id, refusal.Code, refusal.Message)
		return nil, err == nil, err
	case r.Err != nil && at.Last():
		s.log.WarnContext(ctx, "message delivery gave up", "schema", t.Schema, "message_id", id,
			"attempts", at.Attempt, "error", r.Err)
		if err = s.fail(ctx, nil, t, id, CodeNetworkError,
			fmt.Sprintf("The messaging network could not be reached after %d attempts.", at.Attempt)); err != nil {
			return nil, false, err
		}
		// The job ends discarded with the cause in its errors, where an
		// operator finds it (platform admin jobs retry requeues the message
		// once the cause is gone).
		return nil, true, fmt.Errorf("deliver (last attempt; message failed %s): %w", CodeNetworkError, network.Transient(r.Err))
	case r.Err != nil:
		return nil, false, fmt.Errorf("deliver: %w", network.Transient(r.Err))
	default:
		return &sentMessage{id: id, d: r.Delivery, item: i, delivered: r.Delivery.Delivered}, true, nil
	}
}

// missing turns a message that does not exist into the job's permanent
// error; other errors pass through.
func missing(t db.Tenant, id int64, err error) error {
	if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
		return &network.PermanentError{Code: network.CodeInvalidMessage,
			Message: fmt.Sprintf("message %d does not exist in %s", id, t.Schema)}
	}
	return err
}

// claim is what claimMany or claimLocked decided for a message: proceed
// (deliver m from the sender's phone), wait for an earlier message of its
// conversation (blocker, the id of that message: m is left queued and
// unclaimed, or claimed already), or neither (it is sent or failed already,
// or it was failed now).
type claim struct {
	proceed bool
	blocker int64
	m       *row
	phone   string
}

// claimMany is the common case of the claim, for all of ids at once, in one
// statement (one round trip, no explicit transaction): it locks the
// messages (by id) and reads them with their senders, the organization's
// limits and the earlier message of each one's conversation that it waits
// for (blockerSQL: one still queued, not in this batch); it locks the
// delivery-side day counters of the senders whose queued, not yet
// dispatched messages that wait for nothing all fit under their current
// limits (in sender and day order, creating a counter a day's first claim
// finds missing) and counts those messages in them; it stamps them
// dispatched_at.
//
// It returns every message found, as read before the claim, with whether it
// proceeds: claimed now, or dispatched already (a retry after a transient
// network failure); a queued message that waits for an earlier one does
// not, dispatched or not, and neither does a message no longer queued. The
// queued ones it could not claim are undecided (a sender no longer active,
// or a limit lowered since acceptance that not all of a sender's messages
// fit under): claimLocked decides those one by one. A message that does not
// exist is absent from both.
func (s *Service) claimMany(ctx context.Context, t db.Tenant, ids []int64) (map[int64]claim, []int64, error) {
	rows, err := s.claimRows(ctx, t, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("claim messages of %s: %w", t.Schema, err)
	}
	out := make(map[int64]claim, len(rows))
	var undecided []int64
	for i := range rows {
		r := &rows[i]
		sn, org := r.split()
		s.known.putLimit(t, r.SenderNumberID, s.limitOf(org))
		c := claim{m: &r.row, phone: sn.phone}
		switch {
		case r.Status != StatusQueued:
		case r.Blocker != nil:
			c.blocker = *r.Blocker
		case r.DispatchedAt != nil || r.Claimed:
			c.proceed = true
		default:
			undecided = append(undecided, r.ID)
			continue
		}
		out[r.ID] = c
	}
	return out, undecided, nil
}

// claimRow is a message as the claim reads it: with its sender, its
// organization's limits, the earlier message of its conversation it waits
// for (blockerSQL; nil when none), and whether this claim counted it.
type claimRow struct {
	row
	deliveryJoin
	Blocker *int64
	Claimed bool
}

// claimRows runs claimMany's statement, prepared (db.Prepared): claimOneSQL
// for one message, claimManySQL for several.
func (s *Service) claimRows(ctx context.Context, t db.Tenant, ids []int64) ([]claimRow, error) {
	query, idArg := claimManySQL(t), any(ids)
	if len(ids) == 1 {
		query, idArg = claimOneSQL(t), ids[0]
	}
	now := s.clock.Now()
	var rows []claimRow
	err := s.prep.Query(ctx, nil, query, []any{t.OrgID, idArg, now, now.Add(-s.cfg.OrderWindow)}, func(r db.Rows) error {
		for r.Next() {
			var c claimRow
			if err := r.Scan(append(c.deliveryDest(), &c.Blocker, &c.Claimed)...); err != nil {
				return err
			}
			rows = append(rows, c)
		}
		return nil
	})
	return rows, err
}

// usageKey names a sender's daily_usage row.
type usageKey struct {
	sender int64
	day    string // YYYY-MM-DD, the UTC day the message was accepted
}

// claimLocked reads messages ids of tenant t with their senders, the
// organization's limits and their blockers (none of batch, the ids of the
// whole delivery batch, can be one), and decides each under the lock of one
// transaction (the messages claimMany could not claim):
//
//   - a message no longer queued is done (a job run twice, or after a
//     crash, changes nothing);
//   - a message that waits for an earlier one of its conversation still
//     queued waits, unclaimed;
//   - a message dispatched already (a retry after a transient network
//     failure) proceeds without a second claim;
//   - a message whose sender is not active (suspended, rejected since
//     acceptance) fails with sender_not_active;
//   - otherwise the message claims its place in its acceptance day's
//     dispatched counter while that counter is under the sender's current
//     daily limit, in id order, and is stamped dispatched_at; past the limit
//     (lowered since acceptance) it fails with daily_limit_exceeded.
//
// The decision comes after the throttle, so that it sees the limit as late as
// possible. Locks are taken in one order, messages by id and then counters
// by sender and day, the order markSent also follows (receipts lock one
// counter each; acceptance locks only the acceptance-side rows, which no
// delivery statement touches), so that concurrent batches cannot deadlock. A
// message that does not exist is absent from the result.
func (s *Service) claimLocked(ctx context.Context, t db.Tenant, ids, batch []int64) (map[int64]claim, error) {
	var out map[int64]claim
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		out = make(map[int64]claim, len(ids))
		var rows []claimRow
		err := s.prep.Query(ctx, tx, lockMessagesSQL(t.Quoted(), "$1::bigint", "$2::bigint[]", "$3::bigint[]", "$4::timestamptz"),
			[]any{t.OrgID, ids, batch, s.clock.Now().Add(-s.cfg.OrderWindow)},
			func(r db.Rows) error {
				for r.Next() {
					var c claimRow
					if err := r.Scan(append(c.deliveryDest(), &c.Blocker)...); err != nil {
						return err
					}
					rows = append(rows, c)
				}
				return nil
			})
		if err != nil {
			return fmt.Errorf("lock messages: %w", err)
		}
		var sids []int64
		var days []string
		want := make(map[usageKey]int)
		for i := range rows {
			r := &rows[i]
			sn, org := r.split()
			s.known.putLimit(t, r.SenderNumberID, s.limitOf(org))
			if r.Status == StatusQueued && r.Blocker == nil && r.DispatchedAt == nil && sn.status == senders.StatusActive {
				k := usageKey{r.SenderNumberID, dayOf(r.CreatedAt)}
				if _, seen := want[k]; !seen {
					want[k] = 0
					sids, days = append(sids, k.sender), append(days, k.day)
				}
			}
		}
		count, err := s.lockUsage(ctx, tx, t, sids, days)
		if err != nil {
			return err
		}

		var claimed []int64
		for i := range rows {
			r := &rows[i]
			sn, org := r.split()
			c := claim{m: &r.row, phone: sn.phone}
			k := usageKey{r.SenderNumberID, dayOf(r.CreatedAt)}
			n, counted := count[k]
			switch {
			case r.Status != StatusQueued:
			case r.Blocker != nil:
				c.blocker = *r.Blocker
			case r.DispatchedAt != nil:
				c.proceed = true
			case sn.status != senders.StatusActive:
				err = s.fail(ctx, tx, t, r.ID, CodeSenderNotActive,
					fmt.Sprintf("The sender number became %s before the message was delivered.", sn.status))
			case !counted || n >= sn.dailyLimit(org):
				err = s.fail(ctx, tx, t, r.ID, CodeDailyLimitExceeded,
					fmt.Sprintf("The sender number's daily limit (now %d) was reached before the message was delivered.", sn.dailyLimit(org)))
			default:
				count[k] = n + 1
				want[k]++
				claimed = append(claimed, r.ID)
				c.proceed = true
			}
			if err != nil {
				return err
			}
			out[r.ID] = c
		}
		if len(claimed) == 0 {
			return nil
		}
		var ns []int32
		sids, days = sids[:0], days[:0]
		for k, n := range want {
			if n > 0 {
				sids, days, ns = append(sids, k.sender), append(days, k.day), append(ns, int32(count[k]))
			}
		}
		now := s.clock.Now()
		err = s.prep.Exec(ctx, tx, `WITH u AS (
			  UPDATE `+t.Table("daily_usage")+` d SET dispatched = v.n
			    FROM unnest($1::bigint[], $2::text[], $3::int[]) v(sender, day, n)
			   WHERE d.sender_number_id = v.sender AND d.day = v.day::date AND d.side = 'deliver')
			UPDATE `+t.Table("messages")+` SET dispatched_at = $4::timestamptz, updated_at = $4::timestamptz
			 WHERE id = ANY($5::bigint[])`,
			sids, days, ns, now, claimed)
		if err != nil {
			return fmt.Errorf("claim daily limits: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim messages of %s: %w", t.Schema, err)
	}
	return out, nil
}

// lockUsage locks the delivery-side daily_usage rows of (sids[i], days[i])
// in sender and day order, creating the missing ones (nothing dispatched
// yet), and returns their dispatched counters. One statement, so that
// creating and locking follow that one order (an update that changes nothing
// is what locks an existing row in an upsert).
func (s *Service) lockUsage(ctx context.Context, tx pgx.Tx, t db.Tenant, sids []int64, days []string) (map[usageKey]int, error) {
	count := make(map[usageKey]int, len(sids))
	if len(sids) == 0 {
		return count, nil
	}
	err := s.prep.Query(ctx, tx, `INSERT INTO `+t.Table("daily_usage")+` AS d (sender_number_id, day, side)
		SELECT v.sender, v.day::date, 'deliver' FROM unnest($1::bigint[], $2::text[]) v(sender, day)
		 ORDER BY v.sender, v.day::date
		ON CONFLICT (sender_number_id, day, side) DO UPDATE SET dispatched = d.dispatched
		RETURNING d.sender_number_id, d.day::text, d.dispatched`, []any{sids, days}, func(r db.Rows) error {
		for r.Next() {
			var k usageKey
			var n int
			if err := r.Scan(&k.sender, &k.day, &n); err != nil {
				return err
			}
			count[k] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock daily usage: %w", err)
	}
	return count, nil
}

// senderState is the sender as delivery sees it.
type senderState struct {
	phone    string
	status   senders.Status
	override *int
}

// dailyLimit is the sender's override, else the organization's default.
func (sn senderState) dailyLimit(org orgSettings) int {
	if sn.override != nil {
		return *sn.override
	}
	return org.DefaultDailyLimit
}

// deliveryColumns and deliveryFrom read a message (alias m) with its sender
// and its organization's limits, as deliveryJoin scans them; deliveryDest is
// the positional scan of deliveryColumns.
var deliveryColumns = messageColumns + `, s.phone AS sn_phone, s.status AS sn_status,
		       s.daily_limit_override AS sn_daily_limit_override,
		       o.default_daily_limit, o.sender_rate, o.sender_burst`

// deliveryFrom is the FROM clause of deliveryColumns: sc is the tenant
// schema (its quoted name), org the organization's id (a placeholder).
func deliveryFrom(sc, org string) string {
	return sc + `.messages m
		  JOIN ` + sc + `.sender_numbers s ON s.id = m.sender_number_id
		  JOIN central.organizations o ON o.id = ` + org
}

// deliveryJoin is what delivery reads of a message's sender and organization.
type deliveryJoin struct {
	SenderPhone       string
	SenderStatus      senders.Status
	Override          *int
	DefaultDailyLimit int
	SenderRate        *float64
	SenderBurst       *int
}

// deliveryDest returns the destinations of deliveryColumns, in order.
func (c *claimRow) deliveryDest() []any {
	j := &c.deliveryJoin
	return append(c.row.scanDest(), &j.SenderPhone, &j.SenderStatus, &j.Override,
		&j.DefaultDailyLimit, &j.SenderRate, &j.SenderBurst)
}

func (j deliveryJoin) split() (senderState, orgSettings) {
	return senderState{phone: j.SenderPhone, status: j.SenderStatus, override: j.Override},
		orgSettings{DefaultDailyLimit: j.DefaultDailyLimit, SenderRate: j.SenderRate, SenderBurst: j.SenderBurst}
}

// loadDelivery reads message id with its sender and its organization's
// limits, in one query, without locking it. A missing message is an apperr
// not-found.
func (s *Service) loadDelivery(ctx context.Context, t db.Tenant, id int64) (*row, senderState, orgSettings, error) {
	var c claimRow
	err := s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM `+deliveryFrom(t.Quoted(), "$1")+` WHERE m.id = $2`,
		t.OrgID, id).Scan(c.deliveryDest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, senderState{}, orgSettings{}, apperr.NotFound("message")
	}
	if err != nil {
		return nil, senderState{}, orgSettings{}, fmt.Errorf("load message %d of %s for delivery: %w", id, t.Schema, err)
	}
	sn, org := c.split()
	return &c.row, sn, org, nil
}

// limitOf is the organization's sender throttle, else the configured default.
func (s *Service) limitOf(o orgSettings) throttle.Limit {
	l := throttle.Limit{Rate: s.cfg.SenderRate, Burst: s.cfg.SenderBurst}
	if o.SenderRate != nil && *o.SenderRate > 0 {
		l.Rate = *o.SenderRate
	}
	if o.SenderBurst != nil && *o.SenderBurst > 0 {
		l.Burst = *o.SenderBurst
	}
	return l
}

// throttleKey names a sender's bucket.
func throttleKey(t db.Tenant, senderID int64) string { return t.Schema + ":" + itoa(senderID) }

// markSent records deliveries in one statement (prepared, db.Prepared):
// status sent with the network's ids, or delivered as well when the network
// confirms it (sentMessage.delivered: sent_at and delivered_at are then the
// same time), and each sender's day's sent or delivered counter. A message
// no longer queued is left alone (a concurrent run recorded it already),
// except one a receipt (ApplyReceipt) moved on before this record
// (delivered, read or failed): it gets the network's ids and keeps the
// receipt's status (never downgraded), and its counters, which the receipt
// moved, stay. The statement locks the messages (by id) before it changes
// them, so that it knows the status each had (its first step, o), and then
// the counters in sender and day order (the CTE l, which every counter
// update goes through), the order claimMany and claimLocked follow, so that
// concurrent batches cannot deadlock.
//
// With an event recorder (Config.Events) the statement also returns the
// messages it changed, and runs in a transaction with their events
// (message.sent, and message.delivered after it); without one it runs
// alone, as it always did, and builds nothing.
func (s *Service) markSent(ctx context.Context, t db.Tenant, sent []sentMessage) error {
	if len(sent) == 0 {
		return nil
	}
	now := s.clock.Now()
	rows := s.events != nil
	var query string
	var args []any
	if len(sent) == 1 {
		m := sent[0]
		query = markOneSentSQL(t, rows)
		args = []any{m.d.MessageID, m.d.ConversationID, m.d.RecipientID, sentAt(m.d, now), m.delivered, now, m.id}
	} else {
		ids := make([]int64, len(sent))
		netIDs := make([]int64, len(sent))
		convs := make([]int64, len(sent))
		recipients := make([]int64, len(sent))
		at := make([]time.Time, len(sent))
		delivered := make([]bool, len(sent))
		for i, m := range sent {
			ids[i], netIDs[i], convs[i], recipients[i] = m.id, m.d.MessageID, m.d.ConversationID, m.d.RecipientID
			at[i], delivered[i] = sentAt(m.d, now), m.delivered
		}
		query = markSentSQL(t, rows)
		args = []any{ids, netIDs, convs, recipients, at, delivered, now}
	}
	var err error
	if !rows {
		err = s.prep.Exec(ctx, nil, query, args...)
	} else {
		err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
			_, evs, err := s.changedRows(ctx, tx, query, args, 2*len(sent))
			if err != nil {
				return err
			}
			return s.emit(ctx, tx, t, evs)
		})
	}
	if err != nil {
		return fmt.Errorf("record delivery of %d messages of %s: %w", len(sent), t.Schema, err)
	}
	return nil
}

// sentAt is when the network took the message: its delivery's time, else
// now.
func sentAt(d network.Delivery, now time.Time) time.Time {
	if d.DeliveredAt.IsZero() {
		return now
	}
	return d.DeliveredAt
}

// changedRows runs query, whose rows are a status each message had before
// the statement and the message after it (changedColumns), in tx, and
// returns how many messages it changed and the events of those changes (appendEvents; none without an event
// recorder), with room for about capacity of them.
func (s *Service) changedRows(ctx context.Context, tx pgx.Tx, query string, args []any, capacity int) (int, []webhooks.Event, error) {
	n := 0
	var evs []webhooks.Event
	if s.events != nil {
		evs = make([]webhooks.Event, 0, capacity)
	}
	err := s.prep.Query(ctx, tx, query, args, func(r db.Rows) error {
		for r.Next() {
			var old string
			var m row
			if err := r.Scan(append([]any{&old}, m.scanDest()...)...); err != nil {
				return err
			}
			n++
			if s.events != nil {
				evs = appendEvents(evs, old, &m)
			}
		}
		return nil
	})
	return n, evs, err
}

// changedColumns is the result of a statement whose CTE m changed messages
// and returned, as old_status, the status each had before: the rows
// changedRows reads.
var changedColumns = "m.old_status, " + messageColumns

// recordableSQL is whether message x may take a sent record (markSent): it
// is queued, or a receipt moved it on (delivered, read or failed) before
// the record (it gets the network's ids). It is a CASE, not the equivalent
// OR of status comparisons, so that it can only filter the rows the ids
// find and never be the index condition the plan starts from. With the OR,
// a plan made after an ANALYZE that saw almost nothing queued (the usual
// state of a tenant whose messages are delivered as they come) scans every
// queued message through messages_status_idx and joins the batch's ids to
// them: 80 ms and more per batch under a backlog of 10,000, which took the
// delivery drain from 3,300 to 1,000-1,300 messages/s once autovacuum ran
// (docs/performance.md, §Delivery plans start from the ids).
// TestDeliveryPlansStartFromIDs holds it.
const recordableSQL = `CASE WHEN x.status = 'queued' THEN true
	              WHEN x.status IN ('delivered', 'read', 'failed') THEN x.message_id IS NULL
	              ELSE false END`

// markedColumns is what a sent record's CTE m returns: the old status, and
// the whole message when the statement returns rows, else what the
// counters need.
func markedColumns(rows bool) string {
	if rows {
		return `o.status AS old_status, x.*`
	}
	return `o.status AS old_status, x.sender_number_id, x.created_at, x.status`
}

// fail marks a queued message failed with code and text, and counts it in
// its day's failed counter, in one statement, with its message.failed
// event: in tx (claimLocked's), or, when tx is nil, in a transaction of its
// own with an event recorder and alone without one.
func (s *Service) fail(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64, code, text string) error {
	if tx == nil && s.events != nil {
		return s.prep.Tx(ctx, func(tx pgx.Tx) error { return s.fail(ctx, tx, t, id, code, text) })
	}
	sc := t.Quoted()
	_, evs, err := s.changedRows(ctx, tx, `WITH m AS (
		  UPDATE `+sc+`.messages
		     SET status = 'failed', error_code = $1::text, error_message = $2::text,
		         failed_at = $3::timestamptz, updated_at = $3::timestamptz
		   WHERE id = $4::bigint AND status = 'queued'
		  RETURNING 'queued'::text AS old_status, *),
		u AS (
		  INSERT INTO `+sc+`.daily_usage AS u (sender_number_id, day, side, failed)
		  SELECT sender_number_id, (created_at AT TIME ZONE 'UTC')::date, 'deliver', 1 FROM m
		  ON CONFLICT (sender_number_id, day, side) DO UPDATE SET failed = u.failed + 1)
		SELECT `+changedColumns+` FROM m`, []any{code, text, s.clock.Now(), id}, 1)
	if err != nil {
		return fmt.Errorf("record failure of message %d: %w", id, err)
	}
	if err := s.emit(ctx, tx, t, evs); err != nil {
		return err
	}
	s.log.InfoContext(ctx, "message failed", "schema", t.Schema, "message_id", id, "error_code", code)
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
