package acceptance

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sqlq"
)

// releaseStatement returns the acceptance statement's release variant
// (acceptVariant) for checked draft c under the organization's default
// daily limit limit, its arguments and the result its row is scanned
// into.
func (s *Service) releaseStatement(t db.Tenant, limit int, c *Checked) (string, []any, *acceptResult, error) {
	r := &c.row
	res := &acceptResult{template: r.TemplateID != nil, release: true, approved: true}
	v := acceptVariant{byID: true, window: s.cfg.ServiceWindow > 0, template: res.template, release: true}
	q, args, err := s.q.Pgx(v.name(), t.Quoted(), s.releaseArgs(limit, c))
	return q, args, res, err
}

// releaseArgs are the release variant's arguments for checked draft c:
// the whole message, its sender and reserve, and the organization's
// default daily limit limit.
func (s *Service) releaseArgs(limit int, c *Checked) sqlq.Args {
	r := &c.row
	return sqlq.Args{"limit": limit, "phone": "", "to_phone": r.ToPhone, "recipient_user_id": r.RecipientUserID,
		"type": r.Type, "content": r.Content, "file_name": r.FileName, "file_size": r.FileSize, "file_type": r.FileType,
		"duration": r.Duration, "client_reference": r.ClientReference, "at": r.CreatedAt, "template_id": r.TemplateID,
		"template_ref": r.TemplateRef, "sender": r.SenderNumberID, "id": r.ID, "reserve": c.reserve,
		"window_secs": s.windowSecs}
}

// releaseAnswer is what res says of c: nil (queued), ErrNotScheduled or
// the refusal it reads.
func (s *Service) releaseAnswer(ctx context.Context, t db.Tenant, c *Checked, res *acceptResult) error {
	if !res.scheduled {
		return ErrNotScheduled
	}
	if !res.counted {
		r := &c.row
		ref := senders.SenderRef{ID: r.SenderNumberID}
		return s.refusal(ctx, t, &refused{ref: ref, id: res.senderID, phone: res.phone, status: res.status,
			limit: res.limit, at: r.CreatedAt, optedOut: res.optedOut != nil && *res.optedOut,
			windowClosed: res.windowOpen != nil && !*res.windowOpen, templateNotApproved: !res.approved})
	}
	return nil
}

// acceptPipelined runs the acceptance statement's release variant for each
// of cs in tx, in order, in one round trip (pgx's batch: the statements
// pipelined, run by the server one after the other as if sent one by one),
// under the organization's default daily limit limit, and answers each as
// acceptChecked would. One round trip per message was most of a campaign
// tick's time on a busy machine. The drafts whose senders' counters for the
// day were missing (a day's first message of a sender) run again, one by
// one, once the counters exist (acceptChecked). err is a failure of a
// statement (tx is then aborted).
func (s *Service) acceptPipelined(ctx context.Context, tx pgx.Tx, t db.Tenant, limit int, cs []*Checked) (answers []error, err error) {
	var b pgx.Batch
	results := make([]*acceptResult, len(cs))
	for i, c := range cs {
		q, args, res, err := s.releaseStatement(t, limit, c)
		if err != nil {
			return nil, fmt.Errorf("release message %d: %w", c.row.ID, err)
		}
		b.Queue(q, args...)
		results[i] = res
	}
	br := tx.SendBatch(ctx, &b)
	for i, c := range cs {
		rows, err := br.Query()
		if err == nil {
			err = results[i].scan(rows)
			rows.Close()
			if rerr := rows.Err(); err == nil {
				err = rerr
			}
		}
		if err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("release message %d: %w", c.row.ID, err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("release %d messages: %w", len(cs), err)
	}
	answers = make([]error, len(cs))
	for i, c := range cs {
		if results[i].noCounter {
			answers[i] = s.acceptChecked(ctx, tx, t, limit, c)
			if _, ok := Refusal(answers[i]); !ok && answers[i] != nil && !errors.Is(answers[i], ErrNotScheduled) {
				return nil, answers[i]
			}
			continue
		}
		answers[i] = s.releaseAnswer(ctx, t, c, results[i])
	}
	return answers, nil
}
