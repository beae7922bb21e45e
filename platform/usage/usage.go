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
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sqlq"
)

// queries are the package's named queries (platform/sqlq).
//
//go:embed queries/*.sql
var queries embed.FS

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
	db       *db.DB
	q        *sqlq.Queries
	clock    clock.Clock
	defaults Defaults
}

// Config configures a Service.
type Config struct {
	// DB is the database the report reads, through bun. Required.
	DB *db.DB
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
	if cfg.DB == nil || cfg.DB.Bun == nil {
		return nil, errors.New("usage: Config.DB is required")
	}
	defaults.Clock(&cfg.Clock)
	def := cfg.Defaults
	defaults.Positive(&def.SenderRate, 20)
	defaults.Positive(&def.SenderBurst, 40)
	defaults.Positive(&def.APIRateLimit, 50)
	defaults.Positive(&def.APIRateBurst, 100)
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	return &Service{db: cfg.DB, q: q, clock: cfg.Clock, defaults: def}, nil
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

	var org orgLimits
	if err := s.db.Bun.NewSelect().Model(&org).Where("o.id = ?", t.OrgID).Scan(ctx); err != nil {
		return Report{}, fmt.Errorf("organization %d limits: %w", t.OrgID, err)
	}
	r.Limits = Limits{
		DefaultDailyLimit: org.DefaultDailyLimit,
		SenderRate:        orF(org.SenderRate, s.defaults.SenderRate),
		SenderBurst:       orI(org.SenderBurst, s.defaults.SenderBurst),
		APIRateLimit:      orF(org.APIRateLimit, s.defaults.APIRateLimit),
		APIRateBurst:      orI(org.APIRateBurst, s.defaults.APIRateBurst),
	}

	// The history's statements carry their values as literals (bun), so
	// each gets a plan for its own range, as every rare read of the
	// service does (docs/design.md, §The data layer).
	var days []dayRow
	if err := s.q.Raw(s.db.Bun, "daily", sqlq.Args{"schema": t.SchemaIdent(), "from": r.Period.From,
		"to": r.Period.To}).Scan(ctx, &days); err != nil {
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

	var senders []senderRow
	if err := s.q.Raw(s.db.Bun, "senders", sqlq.Args{"schema": t.SchemaIdent(),
		"default_limit": org.DefaultDailyLimit, "today": today.Format(time.DateOnly)}).Scan(ctx, &senders); err != nil {
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

// orgLimits is the bun model of an organization's limits in
// central.organizations; a nil or non-positive rate is the default.
type orgLimits struct {
	bun.BaseModel `bun:"table:central.organizations,alias:o"`

	DefaultDailyLimit int      `bun:"default_daily_limit"`
	SenderRate        *float64 `bun:"sender_rate"`
	SenderBurst       *int     `bun:"sender_burst"`
	APIRateLimit      *float64 `bun:"api_rate_limit"`
	APIRateBurst      *int     `bun:"api_rate_burst"`
}

// dayRow is one day of the daily query.
type dayRow struct {
	Day       time.Time `bun:"day"`
	Used      int64     `bun:"used"`
	Sent      int64     `bun:"sent"`
	Delivered int64     `bun:"delivered"`
	Read      int64     `bun:"read"`
	Failed    int64     `bun:"failed"`
	Received  int64     `bun:"received"`
}

// senderRow is one sender number of the senders query.
type senderRow struct {
	ID         int64  `bun:"id"`
	Phone      string `bun:"phone"`
	Status     string `bun:"status"`
	DailyLimit int    `bun:"daily_limit"`
	Used       int    `bun:"used"`
	Scheduled  int64  `bun:"scheduled"`
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
