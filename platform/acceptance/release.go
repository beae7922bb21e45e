package acceptance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/sqlq"
)

// The release of a stored message: the checks of a send made at the
// release time, in two steps so that no transaction is held while the
// network answers:
//
//	c, err := svc.Check(ctx, t, d, now)      // outside any transaction: the
//	                                         // recipient's lookup, the template
//	err = db.Tx(func(tx) { m, err = svc.Release(ctx, tx, t, c) })
//	                                         // the acceptance statement's release
//	                                         // variant
//
// A refusal at either step is an *apperr.Error whose Code is the check's
// (Refusal tells it from a transient error, worth a retry). ReleaseScheduled
// is the two steps for a scheduled send, with its failure recorded.

// ErrNotScheduled is Release's answer when the message is no longer
// scheduled (canceled, or released by an earlier run): nothing changed.
var ErrNotScheduled = errors.New("message is no longer scheduled")

// Draft is a stored message to release: its id, sender, recipient and
// content as scheduled. For a template send, Template names the template
// and its values: it is rendered at release.
type Draft struct {
	MessageID int64
	SenderID  int64
	ToPhone   string
	// Body is the content; a template send's type is template, its content
	// empty until rendered.
	sendrequest.Body
	ClientReference *string
	Template        *sendrequest.TemplateRef
	// CampaignID is the campaign of a campaign recipient's message (nil
	// for a scheduled send): its delivery job runs at the campaigns'
	// lower priority (queue.PriorityCampaign).
	CampaignID *int64
	// ReservePercent is the share of the sender's daily limit the release
	// leaves to other sends (a campaign's reserve_percent; 0 for a
	// scheduled send): the 'accept' counter rises only while it is under
	// limit − ceil(limit·ReservePercent/100).
	ReservePercent int
}

// DraftOf is the draft of stored message r (its template_ref, if any,
// decoded).
func DraftOf(r *messages.Row) (Draft, error) {
	d := Draft{
		MessageID: r.ID, SenderID: r.SenderNumberID, ToPhone: r.ToPhone, ClientReference: r.ClientReference,
		CampaignID: r.CampaignID, Body: sendrequest.Body{Type: r.Type, Content: r.Content, FileName: r.FileName,
			FileSize: r.FileSize, FileType: r.FileType, Duration: r.Duration},
	}
	if r.TemplateRef != nil {
		var ref sendrequest.TemplateRef
		if err := json.Unmarshal([]byte(*r.TemplateRef), &ref); err != nil {
			return Draft{}, fmt.Errorf("message %d: decode template_ref: %w", r.ID, err)
		}
		d.Template = &ref
	}
	return d, nil
}

// Checked is a draft that passed the checks made outside a transaction,
// ready for Release: the message as it will be accepted.
type Checked struct {
	row     messages.Row
	reserve int
}

// Check runs the checks of draft d that need the network or a read of
// their own, as a send made at now would, outside any transaction: the
// sender's state when the process does not know its phone (a sender error
// comes first, as at a send), the recipient's lookup (422
// recipient_unreachable with its reason_code) and, for a template send,
// the template (template_not_found, template_not_approved) rendered with
// its values. now is the acceptance time Release uses (its UTC day is the
// day whose limit the message counts against).
func (s *Service) Check(ctx context.Context, t db.Tenant, d Draft, now time.Time) (*Checked, error) {
	ref := senders.SenderRef{ID: d.SenderID}
	phone, known := s.known.phone(t, d.SenderID)
	if !known {
		sn, err := s.checkSender(ctx, t, ref)
		if err != nil {
			return nil, err
		}
		phone = sn.Phone
	}
	reach, err := lookup.Check(ctx, s.net, d.ToPhone, phone)
	if err != nil {
		return nil, err
	}
	if !reach.CanReceive {
		if known {
			if _, err := s.checkSender(ctx, t, ref); err != nil {
				return nil, err
			}
		}
		return nil, errUnreachable(reach.ReasonCode)
	}
	c := &Checked{row: messages.Row{
		Message: messages.Message{
			ID:              d.MessageID,
			Direction:       messages.DirectionOutbound,
			SenderNumberID:  d.SenderID,
			ToPhone:         d.ToPhone,
			RecipientUserID: reach.RecipientID,
			Type:            d.Type,
			Content:         d.Content,
			FileName:        d.FileName,
			FileSize:        d.FileSize,
			FileType:        d.FileType,
			Duration:        d.Duration,
			Status:          messages.StatusQueued,
			ClientReference: d.ClientReference,
			CampaignID:      d.CampaignID,
			CreatedAt:       now,
		},
		UpdatedAt: now,
	}, reserve: d.ReservePercent}
	if d.Template != nil {
		tr, err := s.renderTemplate(ctx, t, d.Template)
		if err != nil {
			if known {
				if _, serr := s.checkSender(ctx, t, ref); serr != nil {
					return nil, serr
				}
			}
			return nil, err
		}
		c.row.TemplateID, c.row.TemplateRef, c.row.Content = &tr.id, &tr.ref, tr.text
	}
	s.known.putPhone(t, d.SenderID, phone)
	return c, nil
}

// Release runs the checks of a send made at the check's time (now) for the
// checked draft c and, if they pass, accepts it inside tx: the stored
// message, locked FOR UPDATE while it is still scheduled, becomes queued
// (its created_at the release time), the 'accept' counter of that UTC day
// is raised, and its delivery job is inserted, by the acceptance
// statement's release variant and River's insert. The counter rises only
// while it is under the limit less the draft's reserve
// (Draft.ReservePercent). Else it returns the refusal: an *apperr.Error
// with the check's code (sender_not_active, sender_owner_unverified,
// recipient_opted_out, template_not_approved, outside_service_window,
// daily_limit_exceeded), having changed nothing; or ErrNotScheduled when
// the message is no longer scheduled. It returns the message as queued.
//
// Campaigns release their recipients, which have no row yet, a tick at
// a time with ReleaseMany: Check outside any transaction, then
// ReleaseMany in theirs.
func (s *Service) Release(ctx context.Context, tx pgx.Tx, t db.Tenant, c *Checked) (messages.Message, error) {
	org, err := s.counters.ReadLimits(ctx, tx, t.OrgID)
	if err != nil {
		return messages.Message{}, err
	}
	if err := s.lockOptOuts(ctx, tx, t, c.row.ToPhone); err != nil {
		return messages.Message{}, err
	}
	if err := s.acceptChecked(ctx, tx, t, org.DefaultDailyLimit, c); err != nil {
		return messages.Message{}, err
	}
	if err := s.enqueue(ctx, tx, t, &c.row); err != nil {
		return messages.Message{}, err
	}
	return c.row.Message, nil
}

// acceptChecked is Release without the delivery job, under the
// organization's default daily limit limit: the acceptance statement's
// release variant (run again once the sender's counter exists, when it was
// missing), and the refusal it reads. tx holds the recipient's opt-out lock
// already (lockOptOuts).
func (s *Service) acceptChecked(ctx context.Context, tx pgx.Tx, t db.Tenant, limit int, c *Checked) error {
	q, args, res, err := s.releaseStatement(t, limit, c)
	if err == nil {
		err = s.count(ctx, tx, t, q, args, res, c.row.CreatedAt)
	}
	if err != nil {
		return fmt.Errorf("release message %d: %w", c.row.ID, err)
	}
	return s.releaseAnswer(ctx, t, c, res)
}

// Refusal reports whether err is a check's refusal (the send would have
// been answered 4xx), not a transient failure worth a retry, and returns it.
func Refusal(err error) (*apperr.Error, bool) {
	e, ok := apperr.As(err)
	if !ok {
		return nil, false
	}
	switch e.Kind {
	case apperr.KindInvalid, apperr.KindRateLimited, apperr.KindNotFound, apperr.KindConflict, apperr.KindForbidden:
		return e, true
	}
	return nil, false
}

// ReleaseScheduled releases scheduled message id at the service's time
// (the release job's work): Check, then Release in a transaction. A
// refusal fails the message with the check's error_code and
// error_message, with its message.failed event, while it is still
// scheduled. A message no longer scheduled (canceled, or released by an
// earlier run of the job) is left as it is, so a job run twice releases
// once. It returns the message's status after it (queued, failed, or
// whatever it already was) and an error only for a transient failure,
// after which the release is retried. On the last attempt (last) a
// transient failure fails the message instead (network_error), so that no
// message waits as scheduled with no release to come; if even that fails,
// the error is returned.
//
// The releases of a tenant that run at the same time in this process
// share their statements (releaseBatch): one read, the checks side by
// side, one transaction.
func (s *Service) ReleaseScheduled(ctx context.Context, t db.Tenant, id int64, last bool) (string, error) {
	out, err := s.releases.Do(ctx, t, pendingRelease{id: id, last: last})
	if err != nil {
		return "", err
	}
	return out.val, out.err
}

// releaseAlone is ReleaseScheduled for one message, in a transaction of
// its own.
func (s *Service) releaseAlone(ctx context.Context, t db.Tenant, id int64, last bool) (string, error) {
	var (
		row   messages.Row
		found bool
	)
	err := s.queryNamed(ctx, nil, t, "scheduled", sqlq.Args{"id": id}, func(r db.Rows) error {
		if !r.Next() {
			return nil
		}
		found = true
		return r.Scan(row.ScanDest()...)
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("read scheduled message %d: %w", id, err)
	case !found:
		return "", nil
	case row.Status != messages.StatusScheduled:
		return row.Status, nil
	}
	c, err := s.checkScheduled(ctx, t, &row)
	if err == nil {
		err = s.prep.Tx(ctx, func(tx pgx.Tx) error {
			_, err := s.Release(ctx, tx, t, c)
			return err
		})
	}
	return s.settle(ctx, t, id, last, err)
}

// checkScheduled is Check of stored scheduled message r at the service's
// time.
func (s *Service) checkScheduled(ctx context.Context, t db.Tenant, r *messages.Row) (*Checked, error) {
	d, err := DraftOf(r)
	if err != nil {
		return nil, err
	}
	return s.Check(ctx, t, d, s.clock.Now())
}

// settle ends the release of scheduled message id whose Check and
// Release ended with err: nil is queued, ErrNotScheduled leaves it as it
// is, a refusal fails it with the refusal's code (and a transient error
// too on the last attempt, network_error); any other error is returned
// for a retry.
func (s *Service) settle(ctx context.Context, t db.Tenant, id int64, last bool, err error) (string, error) {
	switch {
	case err == nil:
		return messages.StatusQueued, nil
	case errors.Is(err, ErrNotScheduled):
		return "", nil
	}
	refusal, ok := Refusal(err)
	if !ok {
		if !last {
			return "", err
		}
		refusal = apperr.Wrap(err, apperr.KindUnavailable, messages.CodeNetworkError,
			"The message could not be released: the network or the platform failed at every attempt.")
	}
	m, changed, err := s.endScheduled(ctx, t, id, refusal)
	if err != nil || !changed {
		return "", err
	}
	return m.Status, nil
}

// ReleaseMany releases checked drafts cs that have no row yet (a campaign's
// recipients, ids drawn by the caller from the messages' sequence) in tx as
// Release would each: stored as scheduled in one statement, accepted one by
// one (the acceptance statement's release variant), the refused rows
// deleted and the delivery jobs inserted in one statement each (the
// acceptances pipelined: acceptPipelined). It returns per draft nil
// (queued) or its refusal, as Release's; err is a failure after which tx
// must be rolled back.
func (s *Service) ReleaseMany(ctx context.Context, tx pgx.Tx, t db.Tenant, cs []*Checked) (refusals []error, err error) {
	if len(cs) == 0 {
		return nil, nil
	}
	n := len(cs)
	if err := s.stage(ctx, tx, t, cs); err != nil {
		return nil, fmt.Errorf("stage %d messages: %w", n, err)
	}
	to := make([]string, n)
	for i, c := range cs {
		to[i] = c.row.ToPhone
	}
	if err := s.lockOptOuts(ctx, tx, t, to...); err != nil {
		return nil, err
	}
	refusals = make([]error, n)
	var (
		refused  []int64
		accepted []*messages.Row
	)
	org, err := s.counters.ReadLimits(ctx, tx, t.OrgID)
	if err != nil {
		return nil, err
	}
	answers, err := s.acceptPipelined(ctx, tx, t, org.DefaultDailyLimit, cs)
	if err != nil {
		return nil, err
	}
	for i, c := range cs {
		err := answers[i]
		if _, ok := Refusal(err); ok {
			refusals[i] = err
			refused = append(refused, c.row.ID)
			continue
		}
		if err != nil {
			return nil, err
		}
		accepted = append(accepted, &c.row)
	}
	if len(refused) > 0 {
		if err := s.queryNamed(ctx, tx, t, "unstage", sqlq.Args{"ids": refused}, nil); err != nil {
			return nil, fmt.Errorf("drop %d refused messages: %w", len(refused), err)
		}
	}
	if len(accepted) > 0 {
		if err := s.enqueue(ctx, tx, t, accepted...); err != nil {
			return nil, err
		}
	}
	return refusals, nil
}

// stageRows is the most rows one stage_values statement writes: 14
// arguments a row, well under Postgres's 65,535.
const stageRows = 1000

// stage stores a tick's checked drafts cs as scheduled messages in tx, in
// one statement from arrays (stage_many), or Routed as VALUES inserts of
// at most stageRows rows each (stage_values).
func (s *Service) stage(ctx context.Context, tx pgx.Tx, t db.Tenant, cs []*Checked) error {
	if s.cfg.Routed {
		for from := 0; from < len(cs); from += stageRows {
			rows := make([]sqlq.Args, 0, stageRows)
			for _, c := range cs[from:min(from+stageRows, len(cs))] {
				rows = append(rows, rowArgs(&c.row))
			}
			q, args, err := s.q.PgxRows("stage_values", t.Quoted(), rows)
			if err == nil {
				err = s.prep.Exec(ctx, tx, q, args...)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	var a struct {
		ids, senders                    []int64
		sizes, templateIDs, campaignIDs []*int64
		durations                       []*int
		phones, types, contents         []string
		names, fileTypes, refs, tRefs   []*string
		at                              []time.Time
	}
	for _, c := range cs {
		r := &c.row
		a.ids, a.senders = append(a.ids, r.ID), append(a.senders, r.SenderNumberID)
		a.phones, a.types, a.contents = append(a.phones, r.ToPhone), append(a.types, r.Type), append(a.contents, r.Content)
		a.names, a.sizes, a.fileTypes = append(a.names, r.FileName), append(a.sizes, r.FileSize), append(a.fileTypes, r.FileType)
		a.durations, a.refs = append(a.durations, r.Duration), append(a.refs, r.ClientReference)
		a.templateIDs, a.tRefs = append(a.templateIDs, r.TemplateID), append(a.tRefs, r.TemplateRef)
		a.campaignIDs, a.at = append(a.campaignIDs, r.CampaignID), append(a.at, r.CreatedAt)
	}
	return s.queryNamed(ctx, tx, t, "stage_many", sqlq.Args{"ids": a.ids, "senders": a.senders, "phones": a.phones,
		"types": a.types, "contents": a.contents, "file_names": a.names, "file_sizes": a.sizes,
		"file_types": a.fileTypes, "durations": a.durations, "refs": a.refs, "template_ids": a.templateIDs,
		"template_refs": a.tRefs, "campaign_ids": a.campaignIDs, "at": a.at}, nil)
}
