// Package campaigns is an organization's campaigns (docs/api.md,
// §Campaigns): one message to many recipients, with its content (a
// template or a plain body), its pool of sender numbers, its recipients
// (added while it is a draft, as JSON or CSV) and its states (draft →
// running | scheduled ↔ paused → completed, or canceled).
//
// The package keeps the campaign resource and its rules; it does not turn
// recipients into messages. The release does, through the tables this
// package writes (campaigns, campaign_recipients, messages.campaign_id)
// and the seam Releaser, which every change of state calls inside its
// transaction.
package campaigns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/sendrequest"
	"github.com/bizmsg/platform/platform/sqlq"
	"github.com/bizmsg/platform/platform/templates"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Status is a campaign's state.
type Status string

// The states of a campaign (docs/api.md, §Campaigns: states).
const (
	// StatusDraft: created; recipients may be added.
	StatusDraft Status = "draft"
	// StatusScheduled: started with a send_at still ahead.
	StatusScheduled Status = "scheduled"
	// StatusRunning: its recipients are being released.
	StatusRunning Status = "running"
	// StatusPaused: no recipient is released until it is resumed.
	StatusPaused Status = "paused"
	// StatusCompleted: every recipient was released or skipped (final).
	StatusCompleted Status = "completed"
	// StatusCanceled: canceled; its pending recipients were skipped (final).
	StatusCanceled Status = "canceled"
)

// Statuses returns every campaign status, in the order of the reference.
func Statuses() []Status {
	return []Status{StatusDraft, StatusScheduled, StatusRunning, StatusPaused, StatusCompleted, StatusCanceled}
}

// Recipient statuses as stored (campaign_recipients.status). A released
// recipient's public status is its message's.
const (
	RecipientPending  = "pending"
	RecipientReleased = "released"
	RecipientSkipped  = "skipped"
)

// Limits of a campaign (docs/api.md, §Campaigns).
const (
	MaxNameLength     = 200
	MaxSenders        = 50
	MaxRecipients     = 100_000
	MaxRowsPerRequest = 10_000
	// MaxSendAhead is how far ahead send_at may be.
	MaxSendAhead          = 35 * 24 * time.Hour
	DefaultReservePercent = 10
)

// Error codes of the campaign rules, beyond validation_failed, not_found
// and the send checks' (sender_not_active, template_not_found,
// template_not_approved).
const (
	// CodeCampaignState (409): the campaign's state does not allow the
	// action (adding recipients after draft, pausing a draft, ...).
	CodeCampaignState = "campaign_state"
	// CodeNoRecipients (422): a start of a campaign without recipients.
	CodeNoRecipients = "campaign_no_recipients"
	// CodeTooManyRows (422): a request adding more than
	// MaxRowsPerRequest recipients.
	CodeTooManyRows = "campaign_too_many_rows"
	// CodeRecipientLimit (422): the recipients would pass MaxRecipients.
	CodeRecipientLimit = "campaign_recipient_limit"
	// CodeMalformedCSV (400): a CSV body that cannot be read.
	CodeMalformedCSV = "malformed_csv"
	// CodeCampaignCanceled is the error_code of a recipient skipped
	// because its campaign was canceled.
	CodeCampaignCanceled = "campaign_canceled"
)

// skipReasons maps a skipped recipient's error_code (a send check's code,
// or campaign_canceled) to its name in a campaign's skip_reasons: the one
// place that names them. A code not listed is named as it is.
var skipReasons = map[string]string{
	"recipient_opted_out":     "opted_out",
	"recipient_unreachable":   "unreachable",
	"template_not_approved":   "template_not_approved",
	"template_not_found":      "template_not_found",
	"outside_service_window":  "outside_service_window",
	"sender_not_active":       "sender_not_active",
	"sender_owner_unverified": "sender_owner_unverified",
	CodeCampaignCanceled:      "canceled",
}

// SkipReason is the skip_reasons name of a skipped recipient's error_code.
func SkipReason(code string) string {
	if r, ok := skipReasons[code]; ok {
		return r
	}
	return code
}

// Releaser is the release's seam: the service calls Wake after every
// change of a campaign's state (start, pause, resume, cancel) inside the
// transaction that makes it, with the new state visible in tx, so the
// release can queue (or stop) its work with the change, exactly when the
// change commits.
type Releaser interface {
	Wake(ctx context.Context, tx pgx.Tx, t db.Tenant, campaignID int64) error
}

// Templates is what campaigns need of the template service;
// *templates.Service is one.
type Templates interface {
	// Find returns the organization's template of name and language in
	// any status.
	Find(ctx context.Context, t db.Tenant, name, language string) (templates.Template, bool, error)
	// Get returns template id (404 when there is none).
	Get(ctx context.Context, t db.Tenant, id int64) (templates.Template, error)
	// Status reads template id's status, share-locked in tx.
	Status(ctx context.Context, tx pgx.Tx, t db.Tenant, id int64) (templates.Status, bool, error)
}

// Counts are a campaign's recipients by public status.
type Counts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Queued    int `json:"queued"`
	Sent      int `json:"sent"`
	Delivered int `json:"delivered"`
	Read      int `json:"read"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// TemplateName names a campaign's template.
type TemplateName struct {
	Name     string `json:"name"`
	Language string `json:"language"`
}

// Campaign is an organization's campaign.
type Campaign struct {
	ID              int64
	Name            string
	Status          Status
	SenderNumberIDs []int64
	// TemplateID and Template name a template campaign's template (nil
	// for a plain campaign).
	TemplateID *int64
	Template   *TemplateName
	// Body is a plain campaign's content; a template campaign's Type is
	// "template" and the rest empty.
	Body           sendrequest.Body
	SendAt         *time.Time
	ReservePercent int
	Counts         Counts
	// SkipReasons counts skipped recipients by SkipReason.
	SkipReasons map[string]int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	StartedAt   *time.Time
	PausedAt    *time.Time
	CompletedAt *time.Time
	CanceledAt  *time.Time
	// ReleaseGen is the generation of its release job: each start or
	// resume raises it (campaignrelease.Wake), and a release job of an
	// older generation ends at its next tick. Not in the resource.
	ReleaseGen int64
}

// campaignJSON is the resource of docs/api.md, §Campaigns.
type campaignJSON struct {
	ID              int64          `json:"id"`
	Name            string         `json:"name"`
	Status          Status         `json:"status"`
	SenderNumberIDs []int64        `json:"sender_number_ids"`
	TemplateID      *int64         `json:"template_id"`
	Template        *TemplateName  `json:"template"`
	Type            string         `json:"type"`
	Content         *string        `json:"content"`
	FileName        *string        `json:"file_name"`
	FileSize        *int64         `json:"file_size"`
	FileType        *string        `json:"file_type"`
	Duration        *int           `json:"duration"`
	SendAt          *string        `json:"send_at"`
	ReservePercent  int            `json:"reserve_percent"`
	Counts          Counts         `json:"counts"`
	SkipReasons     map[string]int `json:"skip_reasons"`
	CreatedAt       string         `json:"created_at"`
	UpdatedAt       string         `json:"updated_at"`
	StartedAt       *string        `json:"started_at"`
	PausedAt        *string        `json:"paused_at"`
	CompletedAt     *string        `json:"completed_at"`
	CanceledAt      *string        `json:"canceled_at"`
}

// MarshalJSON renders the API resource: timestamps RFC 3339 in UTC to the
// second, null while unset; content null for a template campaign.
func (c Campaign) MarshalJSON() ([]byte, error) {
	out := campaignJSON{
		ID: c.ID, Name: c.Name, Status: c.Status, SenderNumberIDs: c.SenderNumberIDs,
		TemplateID: c.TemplateID, Template: c.Template, Type: c.Body.Type,
		FileName: c.Body.FileName, FileSize: c.Body.FileSize, FileType: c.Body.FileType, Duration: c.Body.Duration,
		SendAt: clock.FormatPtr(c.SendAt), ReservePercent: c.ReservePercent, Counts: c.Counts,
		SkipReasons: c.SkipReasons, CreatedAt: clock.Format(c.CreatedAt), UpdatedAt: clock.Format(c.UpdatedAt),
		StartedAt: clock.FormatPtr(c.StartedAt), PausedAt: clock.FormatPtr(c.PausedAt),
		CompletedAt: clock.FormatPtr(c.CompletedAt), CanceledAt: clock.FormatPtr(c.CanceledAt),
	}
	if c.TemplateID == nil {
		content := c.Body.Content
		out.Content = &content
	}
	if out.SenderNumberIDs == nil {
		out.SenderNumberIDs = []int64{}
	}
	if out.SkipReasons == nil {
		out.SkipReasons = map[string]int{}
	}
	return json.Marshal(out)
}

// Config configures a Service.
type Config struct {
	// DB is the database. Required.
	DB *db.DB
	// Templates resolves a template campaign's template. Required.
	Templates Templates
	// Events records campaign.started in the transaction of the change.
	// Nil: no events.
	Events webhooks.Emitter
	// Releaser is woken by every change of state. Nil: none (nothing
	// releases recipients).
	Releaser Releaser
	// Clock is the time source. Default clock.Real{}.
	Clock clock.Clock
	// Routed adds recipients by VALUES statements, which Citus routes to
	// the tenant's node (platform/app sets it on a Citus coordinator;
	// docs/scaling.md, §Two-phase commits): the one INSERT ... SELECT FROM
	// unnest(…) is planned through the coordinator, which copies its rows
	// to the node and commits in two phases. Off, that one statement adds
	// them.
	Routed bool
}

// Service implements the campaign rules. It is safe for concurrent use.
type Service struct {
	db        *db.DB
	templates Templates
	events    webhooks.Emitter
	releaser  Releaser
	clock     clock.Clock
	routed    bool
	q         *sqlq.Queries
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Pool == nil:
		return nil, errors.New("campaigns: Config.DB is required")
	case cfg.Templates == nil:
		return nil, errors.New("campaigns: Config.Templates is required")
	}
	defaults.Clock(&cfg.Clock)
	q, err := sqlq.Load(queries, "queries")
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	return &Service{db: cfg.DB, templates: cfg.Templates, events: cfg.Events, releaser: cfg.Releaser, clock: cfg.Clock, q: q,
		routed: cfg.Routed}, nil
}
