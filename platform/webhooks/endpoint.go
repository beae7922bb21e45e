package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
)

// Limits of an endpoint's fields.
const (
	// MaxURLLength is the longest endpoint URL, in bytes.
	MaxURLLength = 2048
	// MaxDescriptionLength is the longest description, in characters.
	MaxDescriptionLength = 500
)

// Error codes of the webhook rules (docs/api.md, §Webhooks), beyond
// validation_failed and not_found.
const (
	// CodeEndpointDisabled (422): a redelivery to a disabled endpoint.
	CodeEndpointDisabled = "webhook_endpoint_disabled"
	// CodeEndpointLimit (422): the organization has Config.MaxEndpoints
	// endpoints already.
	CodeEndpointLimit = "webhook_endpoint_limit"
)

// reasonDisabledByRequest is the disabled_reason of an endpoint disabled
// with PATCH enabled=false.
const reasonDisabledByRequest = "Disabled through the API."

// Endpoint is an organization's webhook endpoint.
//
// It is the bun model of an organization's webhook_endpoints table, named
// per tenant with ModelTableExpr (endpointTable); reads leave out the
// secret (readColumns).
type Endpoint struct {
	bun.BaseModel `bun:"table:webhook_endpoints,alias:e"`

	ID int64 `bun:"id,pk,autoincrement"`
	// URL receives the requests.
	URL string `bun:"url"`
	// Description is the organization's note ("" when none).
	Description string `bun:"description"`
	// Events are the event types the endpoint receives, in the order of
	// EventTypes.
	Events []string `bun:"events,array"`
	// Enabled is false once the endpoint was disabled (by request, or
	// after Config.DisableAfter of failures); it then gets no deliveries.
	Enabled bool `bun:"enabled"`
	// DisabledReason says why the endpoint is disabled; "" while enabled.
	DisabledReason string    `bun:"disabled_reason,nullzero"`
	CreatedAt      time.Time `bun:"created_at"`
	UpdatedAt      time.Time `bun:"updated_at"`
	// Secret is the signing secret, set only in the answers of Create and
	// RotateSecret (it is never shown again).
	Secret string `bun:"secret"`
}

// endpointJSON is the resource of docs/api.md, §Webhooks.
type endpointJSON struct {
	ID             int64    `json:"id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	Events         []string `json:"events"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabled_reason"`
	CreatedAt      string   `json:"created_at"`
	UpdatedAt      string   `json:"updated_at"`
	Secret         string   `json:"secret,omitempty"`
}

// MarshalJSON renders the API resource: timestamps RFC 3339 in UTC to the
// second, disabled_reason null while enabled, secret only when set.
func (e Endpoint) MarshalJSON() ([]byte, error) {
	out := endpointJSON{
		ID:             e.ID,
		URL:            e.URL,
		Description:    e.Description,
		Events:         e.Events,
		Enabled:        e.Enabled,
		DisabledReason: nullable(e.DisabledReason),
		CreatedAt:      clock.Format(e.CreatedAt),
		UpdatedAt:      clock.Format(e.UpdatedAt),
		Secret:         e.Secret,
	}
	if out.Events == nil {
		out.Events = []string{}
	}
	return json.Marshal(out)
}

// EndpointInput is the body of POST /webhooks. Absent (or null) events
// subscribe to every event type.
type EndpointInput struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
}

// EndpointPatch is the body of PATCH /webhooks/{id}. Absent (or null)
// fields are left unchanged.
type EndpointPatch struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Enabled     *bool     `json:"enabled"`
	Description *string   `json:"description"`
}

// endpointTable names the organization's webhook_endpoints table for a
// bun query on the model Endpoint (alias e).
func endpointTable(t db.Tenant) (string, bun.Ident, bun.Ident) {
	return t.TableAs("webhook_endpoints", "e")
}

// readColumns are the columns an endpoint's reads return: all but the
// secret.
var readColumns = []string{"id", "url", "description", "events", "enabled", "disabled_reason", "created_at", "updated_at"}

// insertColumns are the columns Create writes.
var insertColumns = []string{"url", "description", "events", "secret", "created_at", "updated_at"}

// updateColumns are the columns Update writes.
var updateColumns = []string{"url", "events", "description", "enabled", "disabled_reason", "updated_at"}

// Create validates in and adds an endpoint to the organization, with a new
// secret (shown in the answer only).
func (s *Service) Create(ctx context.Context, t db.Tenant, in EndpointInput) (Endpoint, error) {
	var v apperr.Validation
	rawURL := ""
	if in.URL != nil {
		rawURL = *in.URL
	}
	u := s.validateURL(&v, rawURL)
	events := EventTypes()
	if in.Events != nil {
		events = validateEvents(&v, *in.Events)
	}
	desc := ""
	if in.Description != nil {
		desc = v.TrimmedText("description", *in.Description, MaxDescriptionLength)
	}
	if err := v.Err(); err != nil {
		return Endpoint{}, err
	}
	now := s.clock.Now()
	e := Endpoint{URL: u, Description: desc, Events: events, Enabled: true, Secret: newSecret(), CreatedAt: now, UpdatedAt: now}
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		// The count, then the insert (VALUES, which Citus routes to the
		// tenant's node in one phase, where an INSERT ... SELECT is copied
		// through the coordinator in two): concurrent creations may pass
		// the limit by the few that race, never by more.
		n, err := tx.Bun.NewSelect().Model((*Endpoint)(nil)).ModelTableExpr(endpointTable(t)).Count(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("count webhook endpoints: %w", err)
		case n >= int64(s.cfg.MaxEndpoints):
			return apperr.Invalid(CodeEndpointLimit,
				fmt.Sprintf("The organization already has %d webhook endpoints, the most it may have. Delete one first.", s.cfg.MaxEndpoints))
		}
		if _, err := tx.Bun.NewInsert().Model(&e).ModelTableExpr(endpointTable(t)).Column(insertColumns...).
			Returning("id").Exec(ctx); err != nil {
			return fmt.Errorf("insert webhook endpoint: %w", err)
		}
		return nil
	})
	if err != nil {
		return Endpoint{}, err
	}
	return e, nil
}

// List returns one page of the organization's endpoints, newest first,
// never with their secrets.
func (s *Service) List(ctx context.Context, t db.Tenant, limit, cursor string) (page.Of[Endpoint], error) {
	p, err := page.Parse(limit, cursor)
	if err != nil {
		return page.Of[Endpoint]{}, err
	}
	var list []Endpoint
	sel := p.Select(s.db.Bun.NewSelect().Model(&list).ModelTableExpr(endpointTable(t)).Column(readColumns...), "e.id")
	if err := sel.Scan(ctx); err != nil {
		return page.Of[Endpoint]{}, fmt.Errorf("list webhook endpoints: %w", err)
	}
	items, next := page.Cut(p, list, func(e Endpoint) int64 { return e.ID })
	return page.Of[Endpoint]{Items: items, NextCursor: next}, nil
}

// Get returns the organization's endpoint id (404 when it has none).
func (s *Service) Get(ctx context.Context, t db.Tenant, id int64) (Endpoint, error) {
	return s.load(ctx, s.db.Bun, t, id, false)
}

// load reads endpoint id on idb (the database or a transaction), locking
// it FOR UPDATE when lock is set.
func (s *Service) load(ctx context.Context, idb bun.IDB, t db.Tenant, id int64, lock bool) (Endpoint, error) {
	if id <= 0 {
		return Endpoint{}, errEndpointNotFound()
	}
	var e Endpoint
	sel := idb.NewSelect().Model(&e).ModelTableExpr(endpointTable(t)).Column(readColumns...).Where("e.id = ?", id)
	if lock {
		sel.For("UPDATE")
	}
	err := sel.Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Endpoint{}, errEndpointNotFound()
	case err != nil:
		return Endpoint{}, fmt.Errorf("read webhook endpoint %d: %w", id, err)
	}
	return e, nil
}

// Update applies the fields of in that are set. enabled true re-enables a
// disabled endpoint (clearing disabled_reason and the failure streak that
// disabled it); enabled false disables it (its pending deliveries fail when
// their jobs run).
func (s *Service) Update(ctx context.Context, t db.Tenant, id int64, in EndpointPatch) (Endpoint, error) {
	var v apperr.Validation
	var u, desc string
	var events []string
	if in.URL != nil {
		u = s.validateURL(&v, *in.URL)
	}
	if in.Events != nil {
		events = validateEvents(&v, *in.Events)
	}
	if in.Description != nil {
		desc = v.TrimmedText("description", *in.Description, MaxDescriptionLength)
	}
	if err := v.Err(); err != nil {
		return Endpoint{}, err
	}
	var out Endpoint
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		e, err := s.load(ctx, tx.Bun, t, id, true)
		if err != nil {
			return err
		}
		changed := false
		clearFailing := false
		if in.URL != nil && u != e.URL {
			e.URL, changed = u, true
		}
		if in.Events != nil && !slices.Equal(events, e.Events) {
			e.Events, changed = events, true
		}
		if in.Description != nil && desc != e.Description {
			e.Description, changed = desc, true
		}
		if in.Enabled != nil && *in.Enabled != e.Enabled {
			e.Enabled, changed = *in.Enabled, true
			if e.Enabled {
				e.DisabledReason, clearFailing = "", true
			} else {
				e.DisabledReason = reasonDisabledByRequest
			}
		}
		if changed {
			e.UpdatedAt = s.clock.Now()
			upd := tx.Bun.NewUpdate().Model(&e).ModelTableExpr(endpointTable(t)).Column(updateColumns...).WherePK()
			if clearFailing {
				upd.Set("failing_since = NULL")
			}
			if _, err := upd.Exec(ctx); err != nil {
				return fmt.Errorf("update webhook endpoint %d: %w", e.ID, err)
			}
		}
		out = e
		return nil
	})
	return out, err
}

// Delete removes the endpoint and its delivery log; its pending deliveries'
// jobs find nothing to do.
func (s *Service) Delete(ctx context.Context, t db.Tenant, id int64) error {
	if id <= 0 {
		return errEndpointNotFound()
	}
	res, err := s.db.Bun.NewDelete().Model((*Endpoint)(nil)).ModelTableExpr(endpointTable(t)).Where("e.id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete webhook endpoint %d: %w", id, err)
	} else if n == 0 {
		return errEndpointNotFound()
	}
	return nil
}

// RotateSecret gives the endpoint a new secret (in the answer only). The
// one it replaces still signs, beside the new one, for
// Config.SecretOverlap; a secret replaced before that is dropped.
func (s *Service) RotateSecret(ctx context.Context, t db.Tenant, id int64) (Endpoint, error) {
	var out Endpoint
	err := s.db.RunInTx(ctx, func(tx db.Tx) error {
		e, err := s.load(ctx, tx.Bun, t, id, true)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		e.Secret, e.UpdatedAt = newSecret(), now
		_, err = tx.Bun.NewUpdate().Model((*Endpoint)(nil)).ModelTableExpr(endpointTable(t)).
			Set("previous_secret = secret").Set("previous_secret_until = ?", now.Add(s.cfg.SecretOverlap)).
			Set("secret = ?", e.Secret).Set("updated_at = ?", now).Where("e.id = ?", e.ID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("rotate secret of webhook endpoint %d: %w", e.ID, err)
		}
		out = e
		return nil
	})
	return out, err
}

func errEndpointNotFound() error { return apperr.NotFound("webhook endpoint") }

// validateURL checks an endpoint URL (absolute http or https, a host, no
// credentials, not localhost or a refused literal address unless
// AllowPrivate) and returns it trimmed.
func (s *Service) validateURL(v *apperr.Validation, raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		v.Add("url", "is required")
		return ""
	}
	if len(raw) > MaxURLLength {
		v.Add("url", "must be at most "+strconv.Itoa(MaxURLLength)+" characters")
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		v.Add("url", "must be an absolute http or https URL")
		return ""
	}
	if scheme := strings.ToLower(u.Scheme); scheme != "http" && scheme != "https" {
		v.Add("url", "must be an http or https URL")
		return ""
	}
	if u.Hostname() == "" {
		v.Add("url", "must name a host")
		return ""
	}
	if u.User != nil {
		v.Add("url", "must not contain credentials")
		return ""
	}
	if !s.cfg.AllowPrivate {
		if r := blockedHost(u.Hostname()); r != "" {
			v.Add("url", "must not point to localhost or a loopback, private, link-local, metadata or other reserved address (this one is "+r+
				"); a service run for development or tests may allow them with WEBHOOK_ALLOW_PRIVATE=true")
			return ""
		}
	}
	return raw
}

// validateEvents checks a subscription list (at least one known type) and
// returns it deduplicated, in the order of EventTypes.
func validateEvents(v *apperr.Validation, in []string) []string {
	if len(in) == 0 {
		v.Add("events", "must name at least one event type, or be left out for every type")
		return nil
	}
	known := EventTypes()
	for _, typ := range in {
		if !slices.Contains(known, typ) {
			v.Add("events", fmt.Sprintf("unknown event type %q; the types are %s", typ, strings.Join(known, ", ")))
			return nil
		}
	}
	out := make([]string, 0, len(in))
	for _, typ := range known {
		if slices.Contains(in, typ) {
			out = append(out, typ)
		}
	}
	return out
}
