package acceptance

// The statements of acceptance, each in its one-message and its batch
// form, are named queries (queries/*.sql, platform/sqlq) run through
// db.Prepared (sqlq's Pgx: ?schema written as the tenant's quoted schema,
// each other ?name a parameter $n), so each tenant has texts of its own,
// prepared per connection. The rules of a send and where each is
// enforced:
//
//	rule                                   statement step
//	the sender exists and is the request's  accept_* / accept_batch*: s
//	the sender may send (active)            accept_* / accept_batch*: ok
//	the recipient has not opted out         accept_* / accept_batch*: o / s (under the lock of lockOptOuts, docs/design.md §Consent)
//	the template is approved (template sends)  accept_template_*, release_template*: tl, tp (template sends never batch)
//	the service window (when the network has one)  the *_window variants: s (accept_window_open)
//	the daily limit                         accept_* / accept_batch*: c, u (the 'accept' counter, WHERE used < limit)
//	the message, queued                     insert_message / insert_batch, after the counter (a release: release*'s m)
//	its delivery job                        Jobs.InsertManyFastTx (the job outbox) in the same transaction (enqueue)
//
// The delivery's rules are enforced by package delivery's statements.

// acceptVariant names one of the acceptance statement's variants, each a
// named query of its own: accept_[template_]by_{id,phone}[_window] for a
// send, release[_template][_window] for a release (whose sender is always
// named by id). Go chooses the variant (name); no text is joined.
//
// The statement takes the organization's default daily limit (limit: its
// sender numbers' without an override; the organization as the request's
// authentication read it, or messages.Counters.ReadLimits), the request's sender
// phone (phone, "" if none), the recipient (to_phone), the acceptance
// time (at, whose UTC day is the day whose limit it counts against), and
// as its variant needs the sender's id (sender), the message's type and
// the window in seconds (type, window_secs), the template (template_id).
// A release takes the whole message instead (sendArgs, releaseArgs). Its
// steps, each feeding the next, so that a refused step changes nothing
// after it (the fragments of queries/fragments, named for the steps):
//
//   - tl, tp (accept_template_approved; template sends): tl locks the
//     template row in share mode while it is approved, so a status change
//     committed before the lock is seen (the row is read again at its
//     newest version) and one that comes after waits for this commit;
//   - s (accept_sender_by_{id,phone}[_window]): the sender (by id, else by
//     phone) with its daily limit (its override, else the organization's
//     default) and, with a service window, whether it is open
//     (accept_window_open: the message is a template or the recipient
//     wrote to the sender within the window before the acceptance time);
//   - o (accept_opt_out): whether the recipient is on the opt-out list.
//     The transaction took the phone's opt-out lock in share mode before
//     this statement (lockOptOuts), so its snapshot sees an opt-out that
//     committed before, and one committing later waits for this send's
//     commit (docs/design.md, §Consent). No function of the tenant schema
//     is called: Citus refused one for a moment after a schema move
//     (docs/scaling.md, §Rebalancing);
//   - ok: the sender if it is active, the request's phone, if any, is its,
//     the recipient has not opted out, the window is open and the template
//     approved;
//   - c, u (accept_counter): the daily-limit reservation: the sender's
//     acceptance counter for the day (its 'accept' row) goes up only while
//     it is under the limit (UPDATE ... WHERE used < limit), so concurrent
//     sends never pass it. Its row lock is held from here to the commit:
//     for the message's insert (insert_message, the next statement) and
//     the commit. Delivery counts
//     in the day's 'deliver' row, so a delivery never holds this lock. A
//     day's first send of a sender finds no row (c): the result says so
//     (no_counter), and accept creates it (messages.Counters.Create) and
//     runs the statement again.
//
// The message itself is inserted by insert_message once the counter is
// raised, and its delivery job by the job outbox in the same transaction
// (accept). Two statements, not one with an INSERT step: Citus runs a
// statement whose steps write only by UPDATE on the tenant's node alone,
// and one with an INSERT step through the coordinator, which sends its
// intermediate results to every worker node, so that any node down failed
// every organization's sends (docs/scaling.md, §A worker node down). On
// one server the statement with the INSERT step in it measured no less
// CPU a message (docs/scaling.md, §Measured), so both run these two.
//
// The result row tells a refusal apart: no sender, a sender that may not
// send, an opted-out recipient, a closed window, or (else) the daily limit.
// Its columns: the sender's id, phone, status and limit, counted (the
// counter was raised), opted_out, window_open, no_counter, and with
// template approved, with release scheduled (acceptResult).
//
// A release (Release) runs the same checks of a send made at the release
// time, and a step m UPDATEs the stored message (the sender by id) from
// scheduled to queued when u raised the counter, in the same statement
// (accept_release_set: the release time is the message's acceptance time,
// created_at, whose UTC day is the day whose limit it counts against on
// acceptance's side and on delivery's; the other columns are set to the
// draft's values, the stored ones, so that every argument has its type). A
// step r (accept_release_lock) first locks that row FOR UPDATE while it is
// still scheduled, and ok requires it, so that a release and a
// cancellation (or a second run of the release) are serialised on the
// row: whichever commits first wins and the other finds the message no
// longer scheduled and changes nothing. The result's last column, scheduled, tells that case apart. A
// release also takes a reserve (a campaign's reserve_percent, 0 for a
// scheduled send): step u raises the counter only while it is under
// limit − ceil(limit·reserve/100), so a campaign leaves that share of the
// day to the organization's other sends.
//
// The batch form (accept_batch, accept_batch_window: acceptMany) takes
// arrays, the i-th element of each the i-th message's: sender ids (0 when
// named by phone), sender phones ("" when named by id; when both are
// given they must name one number), recipients, types, acceptance times
// and the organization's default daily limits (as each send's request
// read it): i (accept_batch_input), the messages with their ordinals; s,
// each message's sender, opt-out and window; then (accept_batch_reserve)
// ok, those that may send, want, per sender and day its messages, and c,
// u, the reservation delivery's claims also make (on the 'deliver'
// counters), here on the 'accept' counters: c locks them in sender and
// day order, so concurrent batches cannot deadlock, and u raises each by
// its number of messages only while it stays within the limit and only
// when c found every one. Per sender
// and day it raises the counter once for all the sender's messages, or
// not at all, and returns per message its ordinal, its sender's id,
// whether it was counted (accepted) and whether its sender's counter for
// the day is missing.
type acceptVariant struct {
	// byID: the sender is named by its id, else by its phone.
	byID bool
	// window: the network has a service window.
	window bool
	// template: a template message, whose approval the statement checks.
	template bool
	// release: a scheduled message's release, which queues the stored
	// message (step m updates it); its sender is named by id.
	release bool
}

// name is the named query of variant v.
func (v acceptVariant) name() string {
	switch {
	case v.release && v.template && v.window:
		return "release_template_window"
	case v.release && v.template:
		return "release_template"
	case v.release && v.window:
		return "release_window"
	case v.release:
		return "release"
	case v.template && v.byID && v.window:
		return "accept_template_by_id_window"
	case v.template && v.byID:
		return "accept_template_by_id"
	case v.template && v.window:
		return "accept_template_by_phone_window"
	case v.template:
		return "accept_template_by_phone"
	case v.byID && v.window:
		return "accept_by_id_window"
	case v.byID:
		return "accept_by_id"
	case v.window:
		return "accept_by_phone_window"
	}
	return "accept_by_phone"
}

// batchName is the named query of the batch form: with the service
// window's condition when the network has one.
func batchName(window bool) string {
	if window {
		return "accept_batch_window"
	}
	return "accept_batch"
}
