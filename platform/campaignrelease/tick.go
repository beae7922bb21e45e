package campaignrelease

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/campaigns"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/sqlq"
)

// recipient is a pending recipient taken by a tick, and what became of its
// checks.
type recipient struct {
	id        int64
	phone     string
	variables map[string]string
	ref       *string
	sender    int64 // -1: none this tick
	messageID int64
	checked   *acceptance.Checked
	refusal   *apperr.Error
	err       error
	ended     bool // released or skipped, by this tick or before it
}

// tick runs one tick of campaign id's release for the job of release
// generation gen. It locks the campaign: paused, canceled, completed (or
// gone), or of another generation (a newer job carries it) → Done;
// scheduled and due → running with campaign.started; running with
// nothing pending and no message queued → completed with
// campaign.completed, Done. Else it releases the pool's room and says when
// to tick again: Tick less its own time, Idle when nothing is pending, the
// next UTC midnight when every usable sender is out of its allowance for
// the day. m is what the run's earlier ticks learnt (the zero marks read
// everything); the tick moves it on. An error is transient: the job
// retries. The tick's transactions write the tenant's schema alone: the
// job ends when the run returns (River completes it).
func (s *Service) tick(ctx context.Context, t db.Tenant, id, gen int64, m *marks) (Outcome, error) {
	began := time.Now()
	now := s.cfg.Clock.Now()
	window := m.window(began, s.cfg.Tick)
	var (
		out     Outcome
		c       campaigns.Campaign
		pool    []Sender
		pending bool
	)
	err := db.BeginFunc(ctx, s.cfg.DB.Pool, func(tx pgx.Tx) error {
		var err error
		c, err = s.cfg.Campaigns.Lock(ctx, tx, t, id)
		if e, ok := apperr.As(err); ok && e.Kind == apperr.KindNotFound {
			out.Done = true
			return nil
		}
		if err != nil {
			return err
		}
		if c.ReleaseGen != gen {
			out.Done = true
			return nil
		}
		switch c.Status {
		case campaigns.StatusScheduled:
			if c.SendAt != nil && c.SendAt.After(now) {
				out.Next = c.SendAt.Sub(now)
				return nil
			}
			ran, err := s.cfg.Campaigns.RunDue(ctx, tx, t, id)
			if err != nil {
				return err
			}
			if !ran {
				return fmt.Errorf("campaign %d: scheduled and due, but did not run", id)
			}
		case campaigns.StatusRunning:
		default:
			out.Done = true
			return nil
		}
		var queued bool
		state := sqlq.Args{"id": id, "from": m.from, "low": m.low}
		if err := s.row(ctx, tx, t, "state", state).Scan(&pending, &queued); err != nil {
			return fmt.Errorf("read the state of campaign %d: %w", id, err)
		}
		if !pending && !queued {
			if _, err := s.cfg.Campaigns.Complete(ctx, tx, t, id); err != nil {
				return err
			}
			out.Done = true
			return nil
		}
		if !pending {
			return nil
		}
		pool, err = s.pool(ctx, tx, t, c, now, m.low, window)
		return err
	})
	switch {
	case err != nil:
		return Outcome{}, fmt.Errorf("tick of campaign %d: %w", id, err)
	case out.Done || out.Next > 0:
		return out, nil
	case !pending:
		out.Next = s.cfg.Idle
		return out, nil
	}
	total, usable := 0, false
	for _, x := range pool {
		total += x.Room
		usable = usable || x.usable()
	}
	if !usable && len(pool) > 0 && allOutForTheDay(pool) {
		// Every sender at its reserve: the campaign waits, running, for
		// the next UTC day's allowances.
		out.Next = nextMidnight(now).Sub(now) + time.Second
		return out, nil
	}
	m.sawPool(pool)
	if total > 0 {
		if out, err = s.release(ctx, t, c, pool, total, now, m); err != nil {
			return out, err
		}
	}
	out.Next = max(s.cfg.Tick-time.Since(began), 10*time.Millisecond)
	return out, nil
}

// allOutForTheDay reports whether every active sender of pool is at its
// reserve for the day (an inactive one may come back within the day).
func allOutForTheDay(pool []Sender) bool {
	active := 0
	for _, x := range pool {
		if x.Why == WhyInactive {
			continue
		}
		active++
		if x.Why != WhyReserve {
			return false
		}
	}
	return active > 0
}

// release releases up to n pending recipients of campaign c over pool:
// reads them, gives each its sender, checks them outside any transaction
// and records them in one transaction.
func (s *Service) release(ctx context.Context, t db.Tenant, c campaigns.Campaign, pool []Sender, n int, now time.Time, m *marks) (Outcome, error) {
	list, err := s.pending(ctx, t, c.ID, n, m.from)
	if err != nil || len(list) == 0 {
		return Outcome{}, err
	}
	phones := make([]string, len(list))
	for i := range list {
		phones[i] = list[i].phone
	}
	sticky, err := s.sticky(ctx, t, phones, c.SenderNumberIDs)
	if err != nil {
		return Outcome{}, err
	}
	for i, sid := range assign(phones, sticky, pool) {
		list[i].sender = sid
	}
	if err := s.drawIDs(ctx, t, list); err != nil {
		return Outcome{}, err
	}
	s.check(ctx, t, c, list, now)
	out, err := s.record(ctx, t, c, list, now)
	if err == nil {
		m.moveOn(list)
	}
	return out, err
}

// pending reads the next n pending recipients of campaign id from id
// from on.
func (s *Service) pending(ctx context.Context, t db.Tenant, id int64, n int, from int64) ([]recipient, error) {
	rows, err := s.query(ctx, s.cfg.DB.Pool, t, "pending", sqlq.Args{"id": id, "limit": n, "from": from})
	if err != nil {
		return nil, fmt.Errorf("read pending recipients of campaign %d: %w", id, err)
	}
	var (
		out  []recipient
		r    recipient
		vars []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&r.id, &r.phone, &vars, &r.ref}, func() error {
		x := r
		x.variables = nil
		if len(vars) > 0 {
			if err := json.Unmarshal(vars, &x.variables); err != nil {
				return fmt.Errorf("recipient %d: variables: %w", r.id, err)
			}
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read pending recipients of campaign %d: %w", id, err)
	}
	return out, nil
}

// sticky maps each of phones to the pool sender that last wrote to it.
func (s *Service) sticky(ctx context.Context, t db.Tenant, phones []string, pool []int64) (map[string]int64, error) {
	rows, err := s.query(ctx, s.cfg.DB.Pool, t, "sticky", sqlq.Args{"phones": phones, "pool": pool})
	if err != nil {
		return nil, fmt.Errorf("read sticky senders: %w", err)
	}
	out := map[string]int64{}
	var (
		p   string
		sid *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&p, &sid}, func() error {
		if sid != nil {
			out[p] = *sid
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read sticky senders: %w", err)
	}
	return out, nil
}

// drawIDs gives each recipient with a sender its message's id.
func (s *Service) drawIDs(ctx context.Context, t db.Tenant, list []recipient) error {
	n := 0
	for _, r := range list {
		if r.sender > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	rows, err := s.query(ctx, s.cfg.DB.Pool, t, "draw_ids", sqlq.Args{"n": n})
	if err != nil {
		return fmt.Errorf("draw message ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("draw message ids: %w", err)
	}
	for i := range list {
		if list[i].sender > 0 {
			list[i].messageID, ids = ids[0], ids[1:]
		}
	}
	return nil
}

// check runs the checks of every recipient with a sender, cfg.Checks at a
// time, outside any transaction: each ends checked, refused or with a
// transient error.
func (s *Service) check(ctx context.Context, t db.Tenant, c campaigns.Campaign, list []recipient, now time.Time) {
	sem := make(chan struct{}, s.cfg.Checks)
	var wg sync.WaitGroup
	for i := range list {
		r := &list[i]
		if r.sender <= 0 {
			continue
		}
		d := acceptance.Draft{
			MessageID: r.messageID, SenderID: r.sender, ToPhone: r.phone, Body: c.Body, ClientReference: r.ref,
			CampaignID: &c.ID, ReservePercent: c.ReservePercent,
		}
		if c.Template != nil {
			d.Type, d.Content = "template", ""
			d.Template = &sendrequest.TemplateRef{Name: c.Template.Name, Language: c.Template.Language, Variables: r.variables}
			if d.Template.Variables == nil {
				d.Template.Variables = map[string]string{}
			}
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.checked, r.err = s.cfg.Acceptance.Check(ctx, t, d, now)
			if r.err != nil {
				if e, ok := acceptance.Refusal(r.err); ok {
					r.refusal, r.err = e, nil
				}
			}
		})
	}
	wg.Wait()
}

// record writes the tick's outcome in one transaction, share-locking
// campaign c while it is still running in the tick's release generation:
// it locks the tick's recipients that
// are still pending, releases the checked ones (acceptance.ReleaseMany:
// stored, accepted by the scheduled send's statement, queued, counted,
// their delivery jobs inserted; a refused one leaves no row) and marks
// them released, and marks skipped those refused with a check's code,
// except when the refusal is the sender's (not active, the daily limit
// with the reserve): those stay pending for a later tick. Every change
// is guarded by the recipient's pending status, under its row lock.
func (s *Service) record(ctx context.Context, t db.Tenant, c campaigns.Campaign, list []recipient, now time.Time) (Outcome, error) {
	id := c.ID
	var out Outcome
	transient := 0
	err := db.BeginFunc(ctx, s.cfg.DB.Pool, func(tx pgx.Tx) error {
		out = Outcome{}
		var (
			status string
			gen    int64
		)
		if err := s.row(ctx, tx, t, "share_campaign", sqlq.Args{"id": id}).Scan(&status, &gen); err != nil {
			return fmt.Errorf("share-lock campaign %d: %w", id, err)
		}
		if status != string(campaigns.StatusRunning) || gen != c.ReleaseGen {
			return nil
		}
		ids := make([]int64, 0, len(list))
		for _, r := range list {
			if r.sender > 0 {
				ids = append(ids, r.id)
			}
		}
		rows, err := s.query(ctx, tx, t, "lock_recipients", sqlq.Args{"id": id, "ids": ids})
		if err != nil {
			return fmt.Errorf("lock recipients of campaign %d: %w", id, err)
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("lock recipients of campaign %d: %w", id, err)
		}
		pending := make(map[int64]bool, len(locked))
		for _, rid := range locked {
			pending[rid] = true
		}
		var (
			toRelease []*recipient
			checked   []*acceptance.Checked
			done      ended
		)
		transient = 0
		for i := range list {
			r := &list[i]
			switch {
			case r.sender <= 0:
			case !pending[r.id]:
				r.ended = true
			case r.err != nil:
				transient++
			case r.refusal != nil:
				done.skip(r, r.refusal)
			default:
				toRelease, checked = append(toRelease, r), append(checked, r.checked)
			}
		}
		// Senders' day counters are locked in sender order, as the API's
		// batches lock them, so concurrent ticks sharing senders cannot
		// deadlock.
		sort.SliceStable(toRelease, func(i, j int) bool { return toRelease[i].sender < toRelease[j].sender })
		for i, r := range toRelease {
			checked[i] = r.checked
		}
		refusals, err := s.cfg.Acceptance.ReleaseMany(ctx, tx, t, checked)
		if err != nil {
			return err
		}
		for i, r := range toRelease {
			if refusals[i] == nil {
				done.release(r)
				continue
			}
			e, _ := acceptance.Refusal(refusals[i])
			done.skip(r, e)
		}
		out.Released, out.Skipped = len(done.released), len(done.skipped)
		if len(done.released) > 0 {
			args := sqlq.Args{"id": id, "now": now, "ids": done.released, "messages": done.messages, "senders": done.senders}
			if err := s.exec(ctx, tx, t, "mark_released", args); err != nil {
				return fmt.Errorf("mark recipients of campaign %d released: %w", id, err)
			}
		}
		if len(done.skipped) > 0 {
			args := sqlq.Args{"id": id, "now": now, "ids": done.skipped, "codes": done.codes, "senders": done.skipSenders}
			if err := s.exec(ctx, tx, t, "mark_skipped", args); err != nil {
				return fmt.Errorf("mark recipients of campaign %d skipped: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("release recipients of campaign %d: %w", id, err)
	}
	if transient > 0 {
		first := ""
		for _, r := range list {
			if r.err != nil {
				first = r.err.Error()
				break
			}
		}
		s.log.Warn("campaign recipients left pending after a transient failure of their checks",
			"schema", t.Schema, "campaign_id", id, "count", transient, "first_error", first)
		if out.Released+out.Skipped == 0 {
			return out, fmt.Errorf("check recipients of campaign %d: %d failed, first: %s", id, transient, first)
		}
	}
	return out, nil
}

// ended is a tick's recipients to mark, as the marking statements take
// them.
type ended struct {
	released, messages, senders []int64
	skipped, skipSenders        []int64
	codes                       []string
}

// release adds r, released.
func (e *ended) release(r *recipient) {
	r.ended = true
	e.released, e.messages, e.senders = append(e.released, r.id), append(e.messages, r.messageID), append(e.senders, r.sender)
}

// skip adds r, refused by refusal: skipped with its code, unless the
// refusal is the sender's (the daily limit with the reserve, a sender not
// active), which leaves r pending for another tick or sender.
func (e *ended) skip(r *recipient, refusal *apperr.Error) {
	switch refusal.Code {
	case messages.CodeDailyLimitExceeded, senders.CodeSenderNotActive, senders.CodeSenderOwnerUnverified:
		return
	}
	r.ended = true
	e.skipped, e.codes, e.skipSenders = append(e.skipped, r.id), append(e.codes, refusal.Code), append(e.skipSenders, r.sender)
}
