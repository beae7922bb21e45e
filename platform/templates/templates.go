// Package templates is an organization's message templates (docs/api.md,
// §Templates): reviewed, reusable content with positional ({{1}}) or named
// ({{first_name}}) variables, their review by the messaging network
// (pending → approved | rejected, approved ↔ paused | disabled), the
// template.status_changed events of each change, and the rendering of a
// template with a send's variables.
//
// The service is what the Tenant API, the dashboard, the review worker and
// the operator commands share: Create, List, Get, Delete, SetStatus (the
// operator), Review and ApplyVerdict (the network), Submit (the review
// job), Resolve and Render (a send), Preview (a live preview), ListAll and
// Locate (the operator, across organizations).
package templates

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/defaults"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/webhooks"
)

// Status is a template's review state.
type Status string

// The statuses of a template (docs/api.md, §Templates).
const (
	// StatusPending: created, waiting for the network's review.
	StatusPending Status = "pending"
	// StatusApproved: the network approved it; it may be sent.
	StatusApproved Status = "approved"
	// StatusRejected: the network rejected it (RejectedReason says why).
	StatusRejected Status = "rejected"
	// StatusPaused: the network's operator paused it; it may not be sent
	// until approved again.
	StatusPaused Status = "paused"
	// StatusDisabled: the network's operator disabled it.
	StatusDisabled Status = "disabled"
)

// Statuses returns every status, in the order of the reference.
func Statuses() []Status {
	return []Status{StatusPending, StatusApproved, StatusRejected, StatusPaused, StatusDisabled}
}

// Categories are the template categories (docs/api.md, §Templates).
var categories = []string{"marketing", "utility", "authentication"}

// Categories returns the template categories.
func Categories() []string { return append([]string(nil), categories...) }

// Error codes of the template rules, beyond validation_failed and
// not_found.
const (
	// CodeTemplateExists (409): the organization has a template of this
	// name and language.
	CodeTemplateExists = "template_exists"
	// CodeTemplateNotFound (422): a send names no template of the
	// organization.
	CodeTemplateNotFound = "template_not_found"
	// CodeTemplateNotApproved (422): a send names a template that is not
	// approved.
	CodeTemplateNotApproved = "template_not_approved"
	// CodeTransitionNotAllowed (422): a review verdict the template's
	// status does not allow.
	CodeTransitionNotAllowed = "template_transition_not_allowed"
)

// Template is an organization's message template.
//
// It is the bun model of an organization's templates table, named per
// tenant with ModelTableExpr (table).
type Template struct {
	bun.BaseModel `bun:"table:templates,alias:t"`

	ID       int64
	Name     string
	Language string
	Category string
	// Header and Footer are "" when the template has none.
	Header string
	Body   string
	Footer string
	// Variables are the template's variable names, positional ("1", "2",
	// ...) in order, or named in order of first use (header, then body).
	Variables []string `bun:",array"`
	// Examples maps each variable to its example value.
	Examples map[string]string `bun:",type:jsonb"`
	Status   Status
	// RejectedReason says why the network rejected the template; "" unless
	// rejected.
	RejectedReason string `bun:",nullzero"`
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// templateJSON is the resource of docs/api.md, §Templates.
type templateJSON struct {
	ID             int64             `json:"id"`
	Name           string            `json:"name"`
	Language       string            `json:"language"`
	Category       string            `json:"category"`
	Header         *string           `json:"header"`
	Body           string            `json:"body"`
	Footer         *string           `json:"footer"`
	Variables      []string          `json:"variables"`
	Examples       map[string]string `json:"examples"`
	Status         Status            `json:"status"`
	RejectedReason *string           `json:"rejected_reason"`
	CreatedAt      string            `json:"created_at"`
	UpdatedAt      string            `json:"updated_at"`
}

// MarshalJSON renders the API resource: header, footer and rejected_reason
// null when empty, timestamps RFC 3339 in UTC to the second.
func (t Template) MarshalJSON() ([]byte, error) {
	out := templateJSON{
		ID: t.ID, Name: t.Name, Language: t.Language, Category: t.Category,
		Header: nullable(t.Header), Body: t.Body, Footer: nullable(t.Footer),
		Variables: t.Variables, Examples: t.Examples, Status: t.Status,
		RejectedReason: nullable(t.RejectedReason),
		CreatedAt:      clock.Format(t.CreatedAt), UpdatedAt: clock.Format(t.UpdatedAt),
	}
	if out.Variables == nil {
		out.Variables = []string{}
	}
	if out.Examples == nil {
		out.Examples = map[string]string{}
	}
	return json.Marshal(out)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Config configures a Service.
type Config struct {
	// DB is the database; the Service's statements go through DB.Bun.
	// Required.
	DB *db.DB
	// Jobs inserts the review job (queue.TemplateReviewArgs) in the
	// transaction that creates a template, through its pgx view
	// (db.Tx.Pgx): the job outbox in the service, so that transaction
	// writes the tenant schema alone (docs/scaling.md, §Jobs). Required.
	Jobs queue.Inserter
	// Events records template.status_changed in the transaction of each
	// status change. Nil: no events.
	Events webhooks.Emitter
	// Network reviews the templates (Submit). Required for Submit only.
	Network network.Network
	// Clock is the time source. Default clock.Real{}.
	Clock clock.Clock
}

// Service implements the template rules. It is safe for concurrent use.
type Service struct {
	db     *db.DB
	jobs   queue.Inserter
	events webhooks.Emitter
	net    network.Network
	clock  clock.Clock
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.DB == nil || cfg.DB.Bun == nil:
		return nil, errors.New("templates: Config.DB is required")
	case cfg.Jobs == nil:
		return nil, errors.New("templates: Config.Jobs is required")
	}
	defaults.Clock(&cfg.Clock)
	return &Service{db: cfg.DB, jobs: cfg.Jobs, events: cfg.Events, net: cfg.Network, clock: cfg.Clock}, nil
}
