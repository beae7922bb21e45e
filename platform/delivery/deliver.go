package delivery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/sqlq"

	"encoding/json"

	"github.com/bizmsg/platform/platform/messages"
)

// DeliverMessage delivers the message of a delivery job (jobs.MessageDeliverer),
// and then the later messages of its conversation (order.go):
//
//  1. it joins the tenant's next delivery batch (Config.DeliveryBatch): the
//     jobs of a tenant that run at the same time are claimed, delivered and
//     recorded together (deliverBatch), so that a busy worker spends a few
//     statements per batch rather than per message. Alone, a job runs at
//     once in a batch of its own;
//  2. the batch claims the message under lock, unless an earlier message of
//     its conversation is still queued (the job ends: the job that delivers
//     that one carries the conversation on to this one) or another job's
//     claim holds it (the job looks again when the claim would have
//     lapsed, Config.ClaimLease). A message claimed
//     for the first time takes its place under the sender's current daily
//     limit for the day it was accepted, or is failed (daily_limit_exceeded,
//     sender_not_active) undelivered; a message already sent or failed is
//     done;
//  3. a claimed message reserves the sender's next throttle token under its
//     own ticket (msgTicket), so that its reservation is found again in
//     whichever run claims it next. A token due later than the run may wait
//     (Config.MaxInlineWait) snoozes the job for exactly the delay;
//  4. a message whose token is due is delivered with the reference
//     "<schema>:<id>" and its outcome recorded: sent with the network's ids,
//     or failed with the network's refusal code; a transient failure is
//     returned for River to retry, except on the last attempt, which fails
//     the message with network_error;
//  5. once the message is no longer queued, the job goes on with the next
//     queued message of its conversation (the query next), claimed as in
//     step 2 by this job, while its run may wait; past that, it hands the next
//     message to a job of its own (handOver). A message of its own that
//     failed for good, or has been failing for the order window, hands
//     the conversation's next message over too.
func (s *Service) DeliverMessage(ctx context.Context, args queue.DeliverArgs, at queue.DeliveryAttempt) (time.Duration, error) {
	t, err := args.Tenant()
	if err != nil {
		return 0, &network.PermanentError{Code: network.CodeInvalidMessage, Message: err.Error()}
	}
	until := time.Now().Add(s.cfg.MaxInlineWait)
	id, own := args.MessageID, true
	for {
		r, err := s.deliveries.Do(ctx, t, pendingDelivery{id: id, at: at, own: own})
		if err != nil {
			return 0, err
		}
		var wait *throttledError
		switch {
		case errors.As(r.err, &wait):
			if time.Now().Add(wait.delay).After(until) {
				return wait.delay, nil // the claim and the token are the job's next run's
			}
			if !sleep(ctx, wait.delay) {
				return 0, ctx.Err()
			}
			continue
		case isHeld(r.err) && own:
			// Another job's claim holds the message: that job delivers it,
			// or, should it die, its rescued run does. Look again once a
			// claim would have lapsed, in case neither happened.
			return s.cfg.ClaimLease, nil
		case isWaiting(r.err):
			// An earlier message of its conversation is queued: the job
			// that delivers that one carries the conversation on to this
			// one (order.go). Or the conversation's next message is
			// another job's now.
			return 0, nil
		case r.err != nil && own:
			if r.next != 0 {
				// The message failed for good, or has been failing for the
				// order window: the conversation goes on without it.
				if err := s.handOver(ctx, t, r.next, r.conv.sender); err != nil {
					return 0, errors.Join(r.err, err)
				}
			}
			return 0, r.err
		case r.err != nil:
			// The conversation's next message failed: its retries are its
			// own job's, with their backoff and attempts (outcome released
			// the claim of a transient failure).
			s.log.InfoContext(ctx, "handing a failed delivery to its own job", "schema", t.Schema,
				"message_id", id, "error", r.err)
			return 0, s.handOver(ctx, t, id, r.conv.sender)
		case r.next == 0:
			return 0, nil
		case time.Now().After(until):
			return 0, s.handOver(ctx, t, r.next, r.conv.sender)
		}
		id, own = r.next, false
	}
}

// isWaiting reports whether a delivery's outcome is a wait: for an earlier
// message of its conversation, or for another job's claim.
func isWaiting(err error) bool {
	var w *orderWaitError
	return errors.As(err, &w) || isHeld(err)
}

// isHeld reports whether a delivery's outcome is a wait for another job's
// claim.
func isHeld(err error) bool {
	var h heldError
	return errors.As(err, &h)
}

// handOver inserts a delivery job for message id of tenant t (of sender
// number sender), which carries its conversation on from there: a job whose
// run may wait no longer ends with it (DeliverMessage). River notifies the
// workers of the new job, so it runs at once, in any process.
func (s *Service) handOver(ctx context.Context, t db.Tenant, id, sender int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := s.jobs.InsertManyFastTx(ctx, tx, []river.InsertManyParams{queue.DeliveryJob(queue.DeliverArgs{
			TenantRef: queue.RefOf(t), MessageID: id, SenderID: sender,
		})})
		return err
	})
	if err != nil {
		return fmt.Errorf("hand message %d of %s to a delivery job: %w", id, t.Schema, err)
	}
	return nil
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

// pendingDelivery is a delivery job's message, waiting for its tenant's
// next delivery batch: the job's own message, or the next one of its
// conversation.
type pendingDelivery struct {
	id int64
	at queue.DeliveryAttempt
	// own: the job's own message, whose outcome is the job's (else the
	// next one of its conversation, whose retries are its own job's).
	own bool
}

// delivered is a delivery's outcome: err is nil when the message is no
// longer queued (delivered, failed, or done already), an orderWaitError,
// heldError or throttledError when it waits, or the failure. next is then
// the oldest queued message of its conversation conv (0 if none), for the
// job to carry the conversation on.
type delivered struct {
	err  error
	conv conversation
	next int64
	// failing: err is a transient network failure of the job's own
	// message, which stays queued between retries (or failed, on the last
	// attempt); next is then set only when the conversation goes on
	// without it (nextOf).
	failing bool
}

// msgTicket is message id's throttle ticket: the reservation a claim of it
// made, found again by the next claim of it, in any job and any process.
func msgTicket(t db.Tenant, id int64) string { return "msg:" + messages.Reference(t, id) }

// sentMessage is a message the network delivered, to record.
type sentMessage struct {
	id int64
	d  network.Delivery
	// delivered: the network confirms that the recipient has the message
	// (at d.DeliveredAt), so the record makes it delivered, not sent.
	delivered bool
	item      int // its index in the batch
}

// deliverBatch delivers the messages of tenant t's delivery jobs that run
// at the same time (a batch.Batcher run), and returns each job's outcome,
// in order:
//
//   - the organization's limits are read from central (messages.Counters.ReadLimits);
//     claimMany locks and reads the messages and claims their places under
//     their senders' daily limits in one statement; claimLocked decides,
//     in a transaction, the few it leaves (a limit reached, a sender no
//     longer active). A message with an earlier message of its
//     conversation still queued waits (orderWaitError), and so does one
//     another job's claim holds (heldError);
//   - each claimed message reserves its sender's next token (reserve); one
//     due later waits for it (throttledError);
//   - the network delivers the others (network.DeliverAll: one batch where
//     the network offers it), each with its reference "<schema>:<id>", so
//     that a delivery the network already made (a crash before the outcome
//     was recorded) is returned again, not repeated;
//   - markSent records every delivery in one statement. A refusal fails its
//     message with the network's code; a transient failure is that job's
//     error, for River to retry, except on its last attempt, which fails
//     the message with network_error;
//   - for every message no longer queued, its conversation's next message
//     (the query next, read after the records committed).
//
// Two jobs of one message in a batch (a rescued job and the original, or a
// job and the one carrying its conversation on) claim it one after the
// other: the second in a batch of its own after the first's. Fewer than minBatch jobs are
// delivered each on its own, side by side, with the one-message statements.
func (s *Service) deliverBatch(ctx context.Context, t db.Tenant, items []pendingDelivery) ([]delivered, error) {
	if n := len(items); n > 1 && n < minBatch {
		// Too few to pay for the batch statements: each on its own, at once.
		out := make([]delivered, n)
		var wg sync.WaitGroup
		for i := range items {
			wg.Go(func() {
				one, err := s.deliverBatch(ctx, t, items[i:i+1])
				if err != nil {
					out[i].err = err
					return
				}
				out[i] = one[0]
			})
		}
		wg.Wait()
		return out, nil
	}
	first := make(map[int64]int, len(items))
	ids := make([]int64, 0, len(items))
	jobs := make([]int64, 0, len(items))
	var again []int // items of a message already in the batch
	for i, it := range items {
		if _, dup := first[it.id]; dup {
			again = append(again, i)
			continue
		}
		first[it.id] = i
		ids, jobs = append(ids, it.id), append(jobs, it.at.JobID)
	}
	org, err := s.counters.ReadLimits(ctx, s.pool, t.OrgID)
	if err != nil {
		return nil, err
	}
	claims, undecided, err := s.claimMany(ctx, t, org, ids, jobs)
	if err != nil {
		return nil, err
	}
	if len(undecided) > 0 {
		ujobs := make([]int64, len(undecided))
		for i, id := range undecided {
			ujobs[i] = items[first[id]].at.JobID
		}
		decided, err := s.claimLocked(ctx, t, org, undecided, ujobs)
		if err != nil {
			return nil, err
		}
		maps.Copy(claims, decided)
	}

	out := make([]delivered, len(items))
	var proceed []int64
	for _, id := range ids {
		c, found := claims[id]
		o := &out[first[id]]
		if found {
			o.conv = conversation{c.m.SenderNumberID, c.m.ToPhone}
		}
		switch {
		case !found:
			o.err = missing(t, id, items[first[id]].at, apperr.NotFound("message"))
		case c.blocker != 0:
			o.err = &orderWaitError{blocker: c.blocker}
		case c.held:
			o.err = heldError{}
		case c.proceed:
			proceed = append(proceed, id)
		}
	}
	due := s.reserve(ctx, t, claims, proceed, func(id int64, err error) { out[first[id]].err = err })

	if len(due) > 0 {
		s.deliverDue(ctx, t, items, first, claims, due, out)
	}
	if err := s.nextOf(ctx, t, items, ids, first, out); err != nil {
		return nil, err
	}
	if len(again) > 0 {
		// Each job claims for itself (the other may be the one whose claim
		// holds the message): after the first, in a batch of their own.
		rest := make([]pendingDelivery, len(again))
		for j, i := range again {
			rest[j] = items[i]
		}
		later, err := s.deliverBatch(ctx, t, rest)
		if err != nil {
			return nil, err
		}
		for j, i := range again {
			out[i] = later[j]
		}
	}
	return out, nil
}

// deliverDue delivers the claimed messages due (their tokens due now) of
// deliverBatch, records them, and sets each one's outcome in out (indexed
// through first).
func (s *Service) deliverDue(ctx context.Context, t db.Tenant, items []pendingDelivery, first map[int64]int,
	claims map[int64]claim, due []int64, out []delivered) {
	msgs := make([]network.Message, len(due))
	for j, id := range due {
		c := claims[id]
		msgs[j] = networkMessage(t, c.m, c.phone)
	}
	sent := make([]sentMessage, 0, len(due))
	for j, r := range network.DeliverAll(ctx, s.net, msgs, len(msgs)) {
		i := first[due[j]]
		rec, err := s.outcome(ctx, t, items[i], i, r)
		if rec != nil {
			sent = append(sent, *rec)
		}
		out[i].err = err
		out[i].failing = items[i].own && network.IsTransient(err)
	}
	if err := s.markSent(ctx, t, sent); err != nil {
		for _, m := range sent {
			out[m.item].err = err
		}
	}
}

// reserve takes the sender's next throttle token for each message of ids
// (claimed: claims has them), under the message's ticket, and returns those
// whose token is due now, in order. Of the others, fail is told the
// throttledError of each one's delay, or the throttle's error. The batch's
// tokens are taken together: one statement of pace.Store for the batch.
func (s *Service) reserve(ctx context.Context, t db.Tenant, claims map[int64]claim, ids []int64, fail func(int64, error)) []int64 {
	slots := make([]pace.Slot, len(ids))
	for i, id := range ids {
		c := claims[id]
		slots[i] = pace.Slot{Key: throttleKey(t, c.m.SenderNumberID), Ticket: msgTicket(t, id), Limit: c.limit}
	}
	delays, errs := s.throttle.TakeAll(ctx, slots)
	due := ids[:0:0]
	for i, id := range ids {
		switch {
		case errs[i] != nil:
			fail(id, fmt.Errorf("throttle: %w", errs[i]))
		case delays[i] > 0:
			fail(id, &throttledError{delay: delays[i]})
		default:
			due = append(due, id)
		}
	}
	return due
}

// nextOf sets, in out (indexed through first), the next queued message of
// the conversation of every message of ids that is no longer queued (its
// outcome nil), unless another job's unlapsed claim holds that message (it
// carries the conversation already), in one statement (the query next)
// read after the batch's records committed: a message accepted before then is found,
// and one accepted after finds this batch's messages no longer queued, so
// none is left without a job that delivers it.
func (s *Service) nextOf(ctx context.Context, t db.Tenant, items []pendingDelivery, ids []int64, first map[int64]int, out []delivered) error {
	var senders []int64
	var phones []string
	seen := make(map[conversation]bool)
	for _, id := range ids {
		o := out[first[id]]
		if o.err != nil && !o.failing || o.conv == (conversation{}) || seen[o.conv] {
			continue
		}
		seen[o.conv] = true
		senders, phones = append(senders, o.conv.sender), append(phones, o.conv.to)
	}
	if len(senders) == 0 {
		return nil
	}
	type nextMessage struct {
		id        int64
		claimedBy *int64
		holds     *bool // the claim has not lapsed (null: never claimed)
	}
	next := make(map[conversation]nextMessage, len(senders))
	err := s.query(ctx, nil, t, "next", sqlq.Args{"senders": senders, "phones": phones,
		"since": s.clock.Now().Add(-s.cfg.OrderWindow), "lease": s.cfg.ClaimLease.Seconds()}, func(r db.Rows) error {
		for r.Next() {
			var c conversation
			var n nextMessage
			if err := r.Scan(&c.sender, &c.to, &n.id, &n.claimedBy, &n.holds); err != nil {
				return err
			}
			next[c] = n
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the next messages of %d conversations of %s: %w", len(senders), t.Schema, err)
	}
	for _, id := range ids {
		i := first[id]
		o := &out[i]
		n, found := next[o.conv]
		if o.err != nil && !o.failing || !found || n.id == id {
			continue // a failing message still within the window is its conversation's next
		}
		if n.claimedBy != nil && *n.claimedBy != items[i].at.JobID && n.holds != nil && *n.holds {
			continue // another job carries the conversation
		}
		o.next = n.id
	}
	return nil
}

// networkMessage is message m as the network delivers it, from the sender's
// phone. A template message goes as a text message of its rendered content
// (docs/api.md, §Templates: every network delivers text; the template was
// reviewed by the network already), with its template and values beside
// it for a network that delivers templates as such.
func networkMessage(t db.Tenant, m *messages.Row, phone string) network.Message {
	typ := m.Type
	var tpl *network.MessageTemplate
	if typ == messages.TypeTemplate {
		typ = messages.TypeText
		tpl = messageTemplate(m.TemplateRef)
	}
	return network.Message{
		Template:  tpl,
		Reference: messages.Reference(t, m.ID),
		FromPhone: phone,
		ToPhone:   m.ToPhone,
		Media:     network.Media{Type: typ, Content: m.Content, FileName: deref(m.FileName), FileSize: deref(m.FileSize), FileType: deref(m.FileType), Duration: deref(m.Duration)},
	}
}

// missing turns a message that does not exist into the job's permanent
// error from its second attempt (at) on; other errors pass through. The
// first attempt's is an error River retries: on Citus a job can run before
// the message its transaction wrote is visible on the tenant's worker
// (the coordinator commits before the workers' COMMIT PREPARED,
// docs/scaling.md), and the retry finds it. On one server it finds the
// message as missing as before.
func missing(t db.Tenant, id int64, at queue.DeliveryAttempt, err error) error {
	e, ok := apperr.As(err)
	switch {
	case !ok || e.Kind != apperr.KindNotFound:
		return err
	case at.Attempt <= 1:
		return fmt.Errorf("message %d not found in %s: retried once, in case its acceptance is not visible yet", id, t.Schema)
	}
	return &network.PermanentError{Code: network.CodeInvalidMessage,
		Message: fmt.Sprintf("message %d does not exist in %s", id, t.Schema)}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// messageTemplate reads a stored template_ref; nil when there is none or it
// does not decode (the message then goes as its text alone).
func messageTemplate(ref *string) *network.MessageTemplate {
	if ref == nil {
		return nil
	}
	var mt network.MessageTemplate
	if json.Unmarshal([]byte(*ref), &mt) != nil {
		return nil
	}
	return &mt
}
