package acceptance

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
)

// releaseResult is the result row of acceptSQL's release variant for one
// checked draft.
type releaseResult struct {
	template             bool
	senderID, messageID  *int64
	phone                *string
	status               *senders.Status
	limit                *int
	optedOut, windowOpen *bool
	approved             bool
	scheduled            bool
}

// scan reads the statement's one row.
func (r *releaseResult) scan(rows db.Rows) error {
	if !rows.Next() {
		return errors.New("no result row")
	}
	dest := []any{&r.senderID, &r.phone, &r.status, &r.limit, &r.messageID, &r.optedOut, &r.windowOpen}
	if r.template {
		dest = append(dest, &r.approved)
	}
	return rows.Scan(append(dest, &r.scheduled)...)
}

// releaseStatement returns acceptSQL's release variant for checked draft
// c, its arguments and the result its row is scanned into.
func (s *Service) releaseStatement(t db.Tenant, c *Checked) (string, []any, *releaseResult) {
	r := &c.row
	args := []any{t.OrgID, "", r.ToPhone, r.RecipientUserID, r.Type, r.Content, r.FileName, r.FileSize,
		r.FileType, r.Duration, r.ClientReference, r.CreatedAt}
	res := &releaseResult{template: r.TemplateID != nil, approved: true}
	if res.template {
		args = append(args, *r.TemplateID, r.TemplateRef)
	}
	args = append(args, r.SenderNumberID, r.ID, c.reserve)
	return acceptSQL(t, true, s.cfg.ServiceWindow, res.template, true), args, res
}

// releaseAnswer is what res says of c: nil (queued), ErrNotScheduled or
// the refusal it reads.
func (s *Service) releaseAnswer(ctx context.Context, t db.Tenant, c *Checked, res *releaseResult) error {
	if !res.scheduled {
		return ErrNotScheduled
	}
	if res.messageID == nil {
		r := &c.row
		ref := senders.SenderRef{ID: r.SenderNumberID}
		return s.refusal(ctx, t, &refused{ref: ref, id: res.senderID, phone: res.phone, status: res.status,
			limit: res.limit, at: r.CreatedAt, optedOut: res.optedOut != nil && *res.optedOut,
			windowClosed: res.windowOpen != nil && !*res.windowOpen, templateNotApproved: !res.approved})
	}
	return nil
}

// acceptPipelined runs acceptSQL's release variant for each of cs in tx,
// in order, in one round trip (pgx's batch: the statements pipelined, run
// by the server one after the other as if sent one by one), and answers
// each as acceptChecked would. One round trip per message was most of a
// campaign tick's time on a busy machine. err is a failure of a statement
// (tx is then aborted).
func (s *Service) acceptPipelined(ctx context.Context, tx pgx.Tx, t db.Tenant, cs []*Checked) (answers []error, err error) {
	var b pgx.Batch
	results := make([]*releaseResult, len(cs))
	for i, c := range cs {
		q, args, res := s.releaseStatement(t, c)
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
		answers[i] = s.releaseAnswer(ctx, t, c, results[i])
	}
	return answers, nil
}
