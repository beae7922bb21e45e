// Package usage reports an organization's message usage and limits (GET
// /api/v1/usage and the dashboard's GET /api/v1/central/usage): counts by
// status per day for a period, each sender number's allowance today, and the
// organization's limits.
//
// Counts come from the per-sender, per-day counters of daily_usage, kept by
// the send path (used, at acceptance, in the day's 'accept' row), the
// delivery worker and receipts (sent, delivered, read, failed, when a
// message reaches that status, in the day's 'deliver' row) and inbound
// messages (received, in the day's 'receive' row), so a report reads at most
// three rows per sender and day, never the messages themselves. A message is
// counted on the UTC day it was accepted (an inbound one, the day it was
// stored), in the status it has now.
package usage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Period bounds.
const (
	// DefaultPeriodDays is the length of the default period, ending today.
	DefaultPeriodDays = 30
	// MaxPeriodDays is the longest period a report covers.
	MaxPeriodDays = 366
)

// Defaults are the platform-wide limits an organization without its own
// values gets (config SENDER_RATE, SENDER_BURST, API_RATE_LIMIT, API_RATE_BURST).
type Defaults struct {
	SenderRate   float64
	SenderBurst  int
	APIRateLimit float64
	APIRateBurst int
}

// Counts are messages by status. Total counts the outbound messages
// accepted (what the daily limit counts): Total = Queued + Sent + Delivered
// + Read + Failed. Received counts inbound messages, which no limit counts,
// apart from Total.
type Counts struct {
	Queued    int64 `json:"queued"`
	Sent      int64 `json:"sent"`
	Delivered int64 `json:"delivered"`
	Read      int64 `json:"read"`
	Failed    int64 `json:"failed"`
	Total     int64 `json:"total"`
	Received  int64 `json:"received"`
}

// Add adds o's counts to c's.
func (c *Counts) Add(o Counts) {
	c.Queued += o.Queued
	c.Sent += o.Sent
	c.Delivered += o.Delivered
	c.Read += o.Read
	c.Failed += o.Failed
	c.Total += o.Total
	c.Received += o.Received
}

// Day is one UTC day's counts.
type Day struct {
	Date string `json:"date"`
	Counts
}

// Period is the report's range of UTC days, both inclusive (YYYY-MM-DD).
type Period struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// SenderUsage is one sender number's allowance today.
type SenderUsage struct {
	SenderNumberID int64  `json:"sender_number_id"`
	Phone          string `json:"phone"`
	Status         string `json:"status"`
	DailyLimit     int    `json:"daily_limit"`
	UsedToday      int    `json:"used_today"`
	RemainingToday int    `json:"remaining_today"`
	// ResetsAt is the next UTC midnight.
	ResetsAt string `json:"resets_at"`
	// Scheduled counts the sender's scheduled messages waiting for their
	// release (docs/api.md, §Scheduled sends): counted against no day yet,
	// so apart from UsedToday.
	Scheduled int64 `json:"scheduled"`
}

// Totals are the period's counts, plus Scheduled: the scheduled messages
// waiting for their release now, whatever their send_at, counted against
// no day until they are released, so apart from the day's sends.
type Totals struct {
	Counts
	Scheduled int64 `json:"scheduled"`
}

// Limits are the organization's effective limits.
type Limits struct {
	DefaultDailyLimit int     `json:"default_daily_limit"`
	SenderRate        float64 `json:"sender_rate"`
	SenderBurst       int     `json:"sender_burst"`
	APIRateLimit      float64 `json:"api_rate_limit"`
	APIRateBurst      int     `json:"api_rate_burst"`
}

// Report is the usage report.
type Report struct {
	Period    Period        `json:"period"`
	Totals    Totals        `json:"totals"`
	Daily     []Day         `json:"daily"`
	PerSender []SenderUsage `json:"per_sender"`
	Limits    Limits        `json:"limits"`
}

// Query is a report request as it arrives: optional from and to dates
// (YYYY-MM-DD, UTC, inclusive).
type Query struct {
	From string
	To   string
}

// Service builds reports.
type Service struct {
	pool     *pgxpool.Pool
	clock    clock.Clock
	defaults Defaults
}

// Config configures a Service.
type Config struct {
	// Pool is the database the report reads. Required.
	Pool *pgxpool.Pool
	// Clock is the time source of "today". Default clock.Real{}.
	Clock clock.Clock
	// Defaults are the platform-wide limits the report shows an
	// organization without its own. Zero fields are the documented ones
	// (docs/api.md, §Delivery and §Request-rate limit): 20/s burst 40 per
	// sender, 50/s burst 100 per API key.
	Defaults Defaults
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Pool == nil {
		return nil, errors.New("usage: Config.Pool is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	def := cfg.Defaults
	defaults.Positive(&def.SenderRate, 20)
	defaults.Positive(&def.SenderBurst, 40)
	defaults.Positive(&def.APIRateLimit, 50)
	defaults.Positive(&def.APIRateBurst, 100)
	return &Service{pool: cfg.Pool, clock: cfg.Clock, defaults: def}, nil
}

// parse validates q against today (UTC): the default period is the 30 days
// ending today; from alone runs to today, to alone covers the 30 days ending
// then. Errors (422): a malformed date, from after to, or a period longer
// than MaxPeriodDays.
func (q Query) parse(today time.Time) (from, to time.Time, err error) {
	var v apperr.Validation
	to = today
	if q.To != "" {
		t, perr := time.Parse(time.DateOnly, q.To)
		if perr != nil {
			v.Add("to", "must be a date such as 2026-11-22")
		}
		to = t
	}
	from = to.AddDate(0, 0, -(DefaultPeriodDays - 1))
	if q.From != "" {
		f, perr := time.Parse(time.DateOnly, q.From)
		if perr != nil {
			v.Add("from", "must be a date such as 2026-11-01")
		}
		from = f
	}
	if !v.Has("from") && !v.Has("to") {
		switch days := int(to.Sub(from).Hours()/24) + 1; {
		case from.After(to):
			v.Add("from", "must not be after to")
		case days > MaxPeriodDays:
			v.Add("from", fmt.Sprintf("the period must not exceed %d days", MaxPeriodDays))
		}
	}
	return from, to, v.Err()
}

// Report returns organization t's usage for q.
func (s *Service) Report(ctx context.Context, t db.Tenant, q Query) (Report, error) {
	now := s.clock.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	from, to, err := q.parse(today)
	if err != nil {
		return Report{}, err
	}
	r := Report{Period: Period{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly)}}

	var org struct {
		DefaultDailyLimit int
		SenderRate        *float64
		SenderBurst       *int
		APIRateLimit      *float64
		APIRateBurst      *int
	}
	if err := s.pool.QueryRow(ctx, `SELECT default_daily_limit, sender_rate, sender_burst, api_rate_limit, api_rate_burst
		FROM central.organizations WHERE id = $1`, t.OrgID).Scan(&org.DefaultDailyLimit, &org.SenderRate,
		&org.SenderBurst, &org.APIRateLimit, &org.APIRateBurst); err != nil {
		return Report{}, fmt.Errorf("organization %d limits: %w", t.OrgID, err)
	}
	r.Limits = Limits{
		DefaultDailyLimit: org.DefaultDailyLimit,
		SenderRate:        orF(org.SenderRate, s.defaults.SenderRate),
		SenderBurst:       orI(org.SenderBurst, s.defaults.SenderBurst),
		APIRateLimit:      orF(org.APIRateLimit, s.defaults.APIRateLimit),
		APIRateBurst:      orI(org.APIRateBurst, s.defaults.APIRateBurst),
	}

	// The history's queries run on the simple protocol: their values are
	// inlined, so each gets a plan for its own range (as every rare read
	// of the service does; docs/design.md, §One way to write SQL).
	type dayRow struct {
		Day                                           time.Time
		Used, Sent, Delivered, Read, Failed, Received int64
	}
	rows, err := s.pool.Query(ctx, `SELECT day, sum(used), sum(sent), sum(delivered), sum(read), sum(failed), sum(received)
		  FROM `+t.Table("daily_usage")+` WHERE day BETWEEN $1::date AND $2::date
		 GROUP BY day ORDER BY day`, pgx.QueryExecModeSimpleProtocol, r.Period.From, r.Period.To)
	if err != nil {
		return Report{}, fmt.Errorf("daily usage: %w", err)
	}
	days, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dayRow, error) {
		var d dayRow
		err := row.Scan(&d.Day, &d.Used, &d.Sent, &d.Delivered, &d.Read, &d.Failed, &d.Received)
		return d, err
	})
	if err != nil {
		return Report{}, fmt.Errorf("daily usage: %w", err)
	}
	byDay := make(map[string]Counts, len(days))
	for _, d := range days {
		byDay[d.Day.UTC().Format(time.DateOnly)] = Counts{
			Queued:    max(d.Used-d.Sent-d.Delivered-d.Read-d.Failed, 0),
			Sent:      d.Sent,
			Delivered: d.Delivered,
			Read:      d.Read,
			Failed:    d.Failed,
			Total:     d.Used,
			Received:  d.Received,
		}
	}
	r.Daily = make([]Day, 0, int(to.Sub(from).Hours()/24)+1)
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		key := d.Format(time.DateOnly)
		c := byDay[key]
		r.Daily = append(r.Daily, Day{Date: key, Counts: c})
		r.Totals.Counts.Add(c)
	}

	type senderRow struct {
		ID               int64
		Phone, Status    string
		DailyLimit, Used int
		Scheduled        int64
	}
	// The scheduled messages are read through messages_status_idx: the
	// scheduled ones only.
	rows, err = s.pool.Query(ctx, `SELECT s.id, s.phone, s.status,
		       coalesce(s.daily_limit_override, $1), coalesce(u.used, 0), coalesce(w.n, 0)
		  FROM `+t.Table("sender_numbers")+` s
		  LEFT JOIN `+t.Table("daily_usage")+` u ON u.sender_number_id = s.id AND u.day = $2::date AND u.side = 'accept'
		  LEFT JOIN (SELECT m.sender_number_id, count(*) AS n FROM `+t.Table("messages")+` m
		              WHERE m.status = 'scheduled' GROUP BY m.sender_number_id) w ON w.sender_number_id = s.id
		 ORDER BY s.id`, pgx.QueryExecModeSimpleProtocol, org.DefaultDailyLimit, today.Format(time.DateOnly))
	if err != nil {
		return Report{}, fmt.Errorf("sender usage: %w", err)
	}
	senders, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (senderRow, error) {
		var sn senderRow
		err := row.Scan(&sn.ID, &sn.Phone, &sn.Status, &sn.DailyLimit, &sn.Used, &sn.Scheduled)
		return sn, err
	})
	if err != nil {
		return Report{}, fmt.Errorf("sender usage: %w", err)
	}
	resets := today.AddDate(0, 0, 1).Format(time.RFC3339)
	r.PerSender = make([]SenderUsage, 0, len(senders))
	for _, sn := range senders {
		r.PerSender = append(r.PerSender, SenderUsage{
			SenderNumberID: sn.ID,
			Phone:          sn.Phone,
			Status:         sn.Status,
			DailyLimit:     sn.DailyLimit,
			UsedToday:      sn.Used,
			RemainingToday: max(sn.DailyLimit-sn.Used, 0),
			ResetsAt:       resets,
			Scheduled:      sn.Scheduled,
		})
		r.Totals.Scheduled += sn.Scheduled
	}
	return r, nil
}

func orF(p *float64, def float64) float64 {
	if p != nil && *p > 0 {
		return *p
	}
	return def
}

func orI(p *int, def int) int {
	if p != nil && *p > 0 {
		return *p
	}
	return def
}
