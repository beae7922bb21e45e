package acceptance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/idempotency"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/sqlq"

	"github.com/bizmsg/platform/platform/messages"
)

// Result is an accepted send: a domain value, which the doors render
// (202 with {"data": <Resource>}).
type Result struct {
	// MessageID is the accepted message's id.
	MessageID int64
	// Message is the message as accepted (queued); zero for a replay,
	// whose message is the first acceptance's (Resource).
	Message messages.Message
	// Resource is the message as the API showed it when it was accepted
	// (its JSON, messages.Message.AppendJSON). A replay returns the first
	// acceptance's bytes unchanged, as stored under the Idempotency-Key, so
	// that its answer is byte for byte the first one.
	Resource json.RawMessage
	// Replayed reports that the answer is an earlier send's under the same
	// Idempotency-Key: nothing was sent this time.
	Replayed bool
}

// Send validates req and, if the sender may send to the recipient today,
// accepts the message: it is stored as queued with its delivery job, by
// statements shared with the tenant's concurrent sends (see the package
// comment). dailyLimit is the organization's default daily limit (its
// sender numbers' without an override of their own), as the request read
// the organization (its authentication): the acceptance statements take it
// as an argument rather than join central.organizations, so that on Citus
// they run on the tenant's node alone (docs/scaling.md). Errors: 422 validation_failed with
// every field error; 422 sender_not_found, sender_not_active (English
// message), sender_owner_unverified (Arabic message); 422
// recipient_unreachable with a reason_code; 429 daily_limit_exceeded with a
// Retry-After up to the next UTC midnight; 422 idempotency_key_reused; 503
// network_unavailable.
func (s *Service) Send(ctx context.Context, t db.Tenant, dailyLimit int, req *sendrequest.SendRequest) (Result, error) {
	now := s.clock.Now()
	d, err := req.Validate(now)
	if err != nil {
		return Result{}, err
	}
	key, fp := req.IdempotencyKey, d.Fingerprint()
	if key != "" {
		if a, found, err := s.keys.Replay(ctx, nil, t, key, fp, now); err != nil || found {
			return replayed(a), err
		}
	}
	if d.SendAt != nil {
		return s.schedule(ctx, t, d, key, fp, now)
	}

	// The recipient check needs the network, so it runs before (and outside)
	// the acceptance statement. It needs the sender's phone: the request's,
	// else the one this process remembers for the sender's id, else the
	// sender's row.
	ref := d.Sender.Ref()
	var resolved *senders.Sender
	senderPhone := ref.Phone
	if senderPhone == "" {
		if p, ok := s.known.phone(t, ref.ID); ok {
			senderPhone = p
		} else {
			sn, err := s.checkSender(ctx, t, ref)
			if err != nil {
				return Result{}, err
			}
			resolved, senderPhone = &sn, sn.Phone
		}
	}
	reach, err := lookup.Check(ctx, s.net, d.ToPhone, senderPhone)
	if err != nil {
		return Result{}, err
	}
	if !reach.CanReceive {
		// A sender error comes before the recipient's.
		if resolved == nil {
			if _, err := s.checkSender(ctx, t, ref); err != nil {
				return Result{}, err
			}
		}
		return Result{}, errUnreachable(reach.ReasonCode)
	}

	var (
		templateID  *int64
		templateRef *string
	)
	if d.Template != nil {
		// The one extra read of a template send: the template, to render.
		// Its approval is checked again by the acceptance statement.
		tr, err := s.renderTemplate(ctx, t, d.Template)
		if err != nil {
			// A sender error comes before the template's, as before the
			// recipient's.
			if resolved == nil {
				if _, serr := s.checkSender(ctx, t, ref); serr != nil {
					return Result{}, serr
				}
			}
			return Result{}, err
		}
		templateID, templateRef, d.Content = &tr.id, &tr.ref, tr.text
	}

	r := draftRow(d, messages.StatusQueued, now)
	r.RecipientUserID, r.TemplateID, r.TemplateRef = reach.RecipientID, templateID, templateRef
	if key == "" && templateID != nil {
		// Template sends never batch: their statement checks the template
		// too (accept_template_*), which the batch statement of the plain
		// sends does not carry.
		res, err := s.acceptAlone(ctx, t, dailyLimit, ref, r)
		if err != nil {
			return Result{}, err
		}
		s.known.putPhone(t, r.SenderNumberID, senderPhone)
		return res, nil
	}
	if key == "" {
		// One statement, one commit, no transaction to open; concurrent
		// sends of the tenant share it (acceptBatch).
		a, err := s.acceptances.Do(ctx, t, pendingSend{ref: ref, r: r, limit: dailyLimit})
		if err == nil {
			err = a.err
		}
		if err != nil {
			return Result{}, err
		}
		res := a.val
		s.known.putPhone(t, r.SenderNumberID, senderPhone)
		return res, nil
	}

	res, err := s.withKey(ctx, t, key, fp, now, func(tx pgx.Tx) (Result, error) {
		return s.accept(ctx, tx, t, dailyLimit, ref, r)
	})
	if err != nil {
		return Result{}, err
	}
	if !res.Replayed {
		s.known.putPhone(t, r.SenderNumberID, senderPhone)
	}
	return res, nil
}

// withKey runs store, which stores a send in tx, in a transaction that
// first claims the Idempotency-Key key (request fingerprint fp), so that
// concurrent repeats of one key queue on its unique index and the later
// ones answer as the first did; it then stores store's answer under the
// key. A *refused error of store is worded (word) once the transaction is
// over.
func (s *Service) withKey(ctx context.Context, t db.Tenant, key string, fp []byte, now time.Time,
	store func(tx pgx.Tx) (Result, error)) (Result, error) {
	var res Result
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		claimed, err := s.keys.Claim(ctx, tx, t, key, fp, now)
		if err != nil {
			return err
		}
		if !claimed {
			// A concurrent send with this key committed first (this
			// statement waited for it): answer as it did.
			a, found, err := s.keys.Replay(ctx, tx, t, key, fp, now)
			if err == nil && !found {
				err = errors.New("idempotency key conflicted but its record is gone")
			}
			if err == nil {
				res = replayed(a)
				err = errReplayed
			}
			return err
		}
		if res, err = store(tx); err != nil {
			return err
		}
		return s.keys.Save(ctx, tx, t, key, res.Resource)
	})
	if errors.Is(err, errReplayed) {
		return res, nil
	}
	if err != nil {
		return Result{}, s.word(ctx, t, err)
	}
	return res, nil
}

// checkSender resolves the sender named by ref and checks that it may send:
// the sender errors of docs/api.md, §Sending (sender_not_found,
// sender_not_active, sender_owner_unverified, a phone naming another number
// than the id).
func (s *Service) checkSender(ctx context.Context, t db.Tenant, ref senders.SenderRef) (senders.Sender, error) {
	sn, err := s.senders.Resolve(ctx, t, ref)
	if err != nil {
		return senders.Sender{}, err
	}
	if err := senders.CheckSendable(sn); err != nil {
		return senders.Sender{}, err
	}
	return sn, nil
}

// accept stores r (queued) with its delivery job in tx if the sender named
// by ref may send today, under the organization's default daily limit
// limit: the counter statement (acceptVariant), the message's insert
// (insert_message) and the outbox's insert of the job. It renders the
// answer and fills r's id and sender. A refusal stores nothing and is a
// *refused error, which the caller words (refusal) once the transaction is
// over: wording may read the sender on another connection, and must not
// hold tx's meanwhile.
func (s *Service) accept(ctx context.Context, tx pgx.Tx, t db.Tenant, limit int, ref senders.SenderRef, r *messages.Row) (Result, error) {
	template := r.TemplateID != nil
	v := acceptVariant{byID: ref.ID > 0, window: s.cfg.ServiceWindow > 0, template: template}
	if err := s.lockOptOuts(ctx, tx, t, r.ToPhone); err != nil {
		return Result{}, err
	}
	res := &acceptResult{template: template, approved: true}
	q, args, err := s.q.Pgx(v.name(), t.Quoted(), s.sendArgs(limit, ref, r))
	if err == nil {
		err = s.count(ctx, tx, t, q, args, res, r.CreatedAt)
	}
	if err != nil {
		return Result{}, fmt.Errorf("accept message: %w", err)
	}
	if !res.counted {
		return Result{}, &refused{ref: ref, id: res.senderID, phone: res.phone, status: res.status, limit: res.limit,
			at: r.CreatedAt, optedOut: res.optedOut != nil && *res.optedOut,
			windowClosed: res.windowOpen != nil && !*res.windowOpen, templateNotApproved: !res.approved}
	}
	r.SenderNumberID = *res.senderID
	if err := s.insertMessage(ctx, tx, t, r); err != nil {
		return Result{}, err
	}
	if err := s.enqueue(ctx, tx, t, r); err != nil {
		return Result{}, err
	}
	return render(r)
}

// insertMessage inserts r, which the acceptance statement counted, queued
// (insert_message), and fills its id.
func (s *Service) insertMessage(ctx context.Context, tx pgx.Tx, t db.Tenant, r *messages.Row) error {
	err := s.queryNamed(ctx, tx, t, "insert_message", rowArgs(r), func(rows db.Rows) error {
		if !rows.Next() {
			return errors.New("no id returned")
		}
		return rows.Scan(&r.ID)
	})
	if err != nil {
		return fmt.Errorf("insert accepted message: %w", err)
	}
	return nil
}

// queryNamed runs named query name of tenant t with args through
// db.Prepared (Named), in tx (nil: on a pool connection).
func (s *Service) queryNamed(ctx context.Context, tx pgx.Tx, t db.Tenant, name string, args sqlq.Args, scan func(db.Rows) error) error {
	return s.prep.Named(ctx, tx, s.q, name, t.Quoted(), args, scan)
}

// rowArgs are r's columns as the named queries name them.
func rowArgs(r *messages.Row) sqlq.Args {
	return sqlq.Args{"id": r.ID, "sender": r.SenderNumberID, "to_phone": r.ToPhone, "recipient_user_id": r.RecipientUserID,
		"type": r.Type, "content": r.Content, "file_name": r.FileName, "file_size": r.FileSize, "file_type": r.FileType,
		"duration": r.Duration, "client_reference": r.ClientReference, "at": r.CreatedAt, "template_id": r.TemplateID,
		"template_ref": r.TemplateRef, "campaign_id": r.CampaignID, "send_at": r.SendAt}
}

// sendArgs are the acceptance statement's arguments (acceptVariant) for a
// send of r by the sender named by ref under the organization's default
// daily limit limit; each variant takes those it names.
func (s *Service) sendArgs(limit int, ref senders.SenderRef, r *messages.Row) sqlq.Args {
	return sqlq.Args{"limit": limit, "phone": ref.Phone, "sender": ref.ID, "to_phone": r.ToPhone, "type": r.Type,
		"at": r.CreatedAt, "template_id": r.TemplateID, "window_secs": s.windowSecs}
}

// count runs query, the acceptance statement (acceptVariant) with args, in
// tx and scans its row into res; when the sender's counter for the day of
// at was missing (a day's first send), it creates the counter and runs the
// statement again.
func (s *Service) count(ctx context.Context, tx pgx.Tx, t db.Tenant, query string, args []any, res *acceptResult, at time.Time) error {
	for try := 0; ; try++ {
		if err := s.prep.Query(ctx, tx, query, args, res.scan); err != nil {
			return err
		}
		if !res.noCounter {
			return nil
		}
		if try > 0 || res.senderID == nil {
			return errors.New("the sender's daily counter is missing after its creation")
		}
		if err := s.createCounters(ctx, tx, t, []int64{*res.senderID}, []string{messages.Day(at)}); err != nil {
			return err
		}
	}
}

// createCounters creates the missing 'accept' counters of senders sids[i]
// on days days[i] ('YYYY-MM-DD') in tx (messages.Counters.Create).
func (s *Service) createCounters(ctx context.Context, tx pgx.Tx, t db.Tenant, sids []int64, days []string) error {
	q, args, err := s.counters.Create(t, messages.SideAccept, sids, days)
	if err != nil {
		return err
	}
	if err := s.prep.Exec(ctx, tx, q, args...); err != nil {
		return fmt.Errorf("create %d daily counters: %w", len(sids), err)
	}
	return nil
}

// acceptResult is the result row of the acceptance statement (any
// acceptVariant).
type acceptResult struct {
	template, release    bool
	senderID             *int64
	phone                *string
	status               *senders.Status
	limit                *int
	counted              bool
	optedOut, windowOpen *bool
	noCounter            bool
	approved             bool
	scheduled            bool
}

// scan reads the statement's one row.
func (r *acceptResult) scan(rows db.Rows) error {
	if !rows.Next() {
		return errors.New("no result row")
	}
	dest := []any{&r.senderID, &r.phone, &r.status, &r.limit, &r.counted, &r.optedOut, &r.windowOpen, &r.noCounter}
	if r.template {
		dest = append(dest, &r.approved)
	}
	if r.release {
		dest = append(dest, &r.scheduled)
	}
	return rows.Scan(dest...)
}

// acceptAlone accepts r in a transaction of its own (accept).
func (s *Service) acceptAlone(ctx context.Context, t db.Tenant, limit int, ref senders.SenderRef, r *messages.Row) (Result, error) {
	var res Result
	err := s.prep.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = s.accept(ctx, tx, t, limit, ref, r)
		return err
	})
	if err != nil {
		return Result{}, s.word(ctx, t, err)
	}
	return res, nil
}

// refused is an acceptance the statement refused, with what it read of the
// sender (nil when it found none) and the recipient.
type refused struct {
	ref    senders.SenderRef
	id     *int64
	phone  *string
	status *senders.Status
	limit  *int
	at     time.Time
	// optedOut: the recipient is on the opt-out list; windowClosed: the
	// service window is closed for this message; templateNotApproved: its
	// template is no longer approved.
	optedOut, windowClosed, templateNotApproved bool
}

func (r *refused) Error() string { return "acceptance refused" }

// word turns a *refused error into the refusal the client reads; other
// errors pass through.
func (s *Service) word(ctx context.Context, t db.Tenant, err error) error {
	var r *refused
	if !errors.As(err, &r) {
		return err
	}
	return s.refusal(ctx, t, r)
}

// enqueue inserts the delivery jobs of the accepted messages rows in tx,
// with Jobs.InsertManyFastTx (the job outbox's).
func (s *Service) enqueue(ctx context.Context, tx pgx.Tx, t db.Tenant, rows ...*messages.Row) error {
	params := make([]river.InsertManyParams, len(rows))
	for i, r := range rows {
		params[i] = queue.DeliveryJob(queue.DeliverArgs{
			TenantRef: queue.RefOf(t), MessageID: r.ID, SenderID: r.SenderNumberID,
		})
		if r.CampaignID != nil {
			// A campaign's message waits behind the API's sends
			// (docs/design.md, §Campaigns: pacing and fairness).
			params[i].InsertOpts.Priority = queue.PriorityCampaign
		}
	}
	if _, err := s.jobs.InsertManyFastTx(ctx, tx, params); err != nil {
		return fmt.Errorf("enqueue %d deliveries: %w", len(rows), err)
	}
	return nil
}

// render is the result of the acceptance of r: the message and its
// resource, as json.Marshal writes it (the bytes the doors answered with
// before they rendered the answer themselves).
func render(r *messages.Row) (Result, error) {
	m := r.Message
	res, err := json.Marshal(m)
	if err != nil {
		return Result{}, fmt.Errorf("render message %d: %w", r.ID, err)
	}
	return Result{MessageID: r.ID, Message: m, Resource: res}, nil
}

// refusal is the error of an acceptance that stored nothing, in the order
// of docs/api.md §Sending: the sender's (read by the statement), the
// opt-out, the template, the service window, else the daily limit's.
func (s *Service) refusal(ctx context.Context, t db.Tenant, r *refused) error {
	if r.id == nil || (r.ref.Phone != "" && *r.phone != r.ref.Phone) {
		// No such sender, or id and phone name different numbers: the
		// senders service words those errors.
		if _, err := s.checkSender(ctx, t, r.ref); err != nil {
			return err
		}
		return fmt.Errorf("accept message: sender %+v appeared during the send", r.ref)
	}
	if err := senders.CheckSendable(senders.Sender{Status: *r.status}); err != nil {
		return err
	}
	switch {
	case r.optedOut:
		return apperr.Invalid(messages.CodeRecipientOptedOut,
			"The recipient has opted out of messages from this organization (they wrote STOP, or were added to the opt-out list).")
	case r.templateNotApproved:
		return errTemplateNotApproved()
	case r.windowClosed:
		return apperr.Invalid(messages.CodeOutsideServiceWindow,
			"The recipient has not written to this sender number within the service window: only a template message may be sent.")
	}
	return errDailyLimit(*r.limit, r.at)
}

// replayed is the Result of a replay of stored answer a.
func replayed(a idempotency.Answer) Result {
	return Result{MessageID: a.MessageID, Resource: a.Resource, Replayed: true}
}

// errReplayed rolls back the transaction of a send whose idempotency key was
// answered by a concurrent send.
var errReplayed = errors.New("answered by an earlier send with the same idempotency key")

// errUnreachable is the 422 for a recipient the lookup rule refuses.
func errUnreachable(reason string) *apperr.Error {
	msg := "The recipient cannot receive messages."
	if r := lookup.Explain(reason); r != "" {
		msg = "The recipient cannot receive messages: " + r
	}
	e := apperr.Invalid(messages.CodeRecipientUnreachable, msg)
	e.Details = map[string]any{"reason_code": reason}
	return e
}

// errDailyLimit is the 429 for a sender that used its allowance (limit) for
// today.
func errDailyLimit(limit int, now time.Time) error {
	resets := nextMidnight(now)
	e := apperr.RateLimited(messages.CodeDailyLimitExceeded,
		fmt.Sprintf("The sender number has reached its daily limit of %d messages. The limit resets at %s.",
			limit, resets.Format(time.RFC3339)),
		resets.Sub(now))
	e.Details = map[string]any{"daily_limit": limit, "resets_at": resets.Format(time.RFC3339)}
	return e
}

// Idempotency keys.

// nextMidnight is the start of the UTC day after t.
func nextMidnight(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// draftRow is the outbound message d writes in status, accepted at now:
// its recipient, body and client reference. The path that stores it sets
// what it knows besides (the sender, the recipient's account, the
// template, send_at).
func draftRow(d sendrequest.Send, status string, now time.Time) *messages.Row {
	m := messages.Message{Direction: messages.DirectionOutbound, ToPhone: d.ToPhone, Type: d.Type, Content: d.Content,
		FileName: d.FileName, FileSize: d.FileSize, FileType: d.FileType, Duration: d.Duration,
		Status: status, ClientReference: d.ClientReference, CreatedAt: now}
	return &messages.Row{Message: m, UpdatedAt: now}
}
