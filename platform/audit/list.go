package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/page"
)

// Service reads the audit log. It is safe for concurrent use.
type Service struct {
	db *db.DB
}

// Config configures a Service.
type Config struct {
	// DB is the database the audit log is read from, through bun.
	// Required.
	DB *db.DB
}

// New validates cfg and returns the audit log's reader.
func New(cfg Config) (*Service, error) {
	if cfg.DB == nil || cfg.DB.Bun == nil {
		return nil, errors.New("audit: Config.DB is required")
	}
	return &Service{db: cfg.DB}, nil
}

// entryRow is the bun model of central.audit_log as List reads it.
type entryRow struct {
	bun.BaseModel `bun:"table:central.audit_log,alias:a"`

	ID        int64          `bun:"id"`
	ActorType string         `bun:"actor_type"`
	ActorID   int64          `bun:"actor_id,scanonly"`
	ActorName string         `bun:"actor_name,scanonly"`
	Action    string         `bun:"action"`
	Target    string         `bun:"target"`
	Details   map[string]any `bun:"details,type:jsonb"`
	CreatedAt time.Time      `bun:"created_at"`
}

// Query is a list request as it arrives: the query parameters of GET
// /audit-log, unparsed (docs/api.md, §Audit log).
type Query struct {
	Limit  string
	Cursor string
	// Actor is a user id, "user:<id>", "api_key:<id>", or one of operator,
	// network, system.
	Actor string
	// Action is an action (api_key.create) or a family (api_key: all of
	// its actions).
	Action string
	// Target is "<type>:<id>" (api_key:12).
	Target string
	// Since (inclusive) and Until (exclusive) are RFC 3339 date-times.
	Since string
	Until string
}

// QueryFrom reads a Query from URL query parameters of the same names.
func QueryFrom(v url.Values) Query {
	return Query{
		Limit:  v.Get("limit"),
		Cursor: v.Get("cursor"),
		Actor:  v.Get("actor"),
		Action: v.Get("action"),
		Target: v.Get("target"),
		Since:  v.Get("since"),
		Until:  v.Get("until"),
	}
}

// Filter is a validated Query.
type Filter struct {
	Page page.Query
	// Actor: Type "" for any actor; ID 0 for any of its type.
	Actor Actor
	// Action is one action, or "" (see Family).
	Action string
	// Family is an action family, or "".
	Family string
	// Target is the zero Target for any.
	Target Target
	// Since and Until are nil when not given.
	Since, Until *time.Time
}

// Parse validates every parameter and reports every problem at once: a 422
// validation_failed naming each bad parameter.
func (q Query) Parse() (Filter, error) {
	var v apperr.Validation
	var f Filter
	pg, err := page.Parse(q.Limit, q.Cursor)
	if e, ok := apperr.As(err); ok {
		for field, msgs := range e.Fields {
			for _, m := range msgs {
				v.Add(field, m)
			}
		}
	} else if err != nil {
		return Filter{}, err
	}
	f.Page = pg
	if q.Actor != "" {
		a, ok := parseActor(q.Actor)
		if !ok {
			v.Add("actor", "must be a user id, user:<id>, api_key:<id>, operator, network or system")
		}
		f.Actor = a
	}
	if q.Action != "" {
		switch {
		case known(Actions, q.Action):
			f.Action = q.Action
		case known(Families, q.Action):
			f.Family = q.Action
		default:
			v.Add("action", "must be one of "+strings.Join(Actions, ", ")+", or a family: "+strings.Join(Families, ", "))
		}
	}
	if q.Target != "" {
		t, ok := ParseTarget(q.Target)
		if !ok {
			v.Add("target", "must be api_key:<id>, user:<id>, sender_number:<id> or opt_out:<id>")
		}
		f.Target = t
	}
	f.Since = page.ParseTime(&v, "since", q.Since)
	f.Until = page.ParseTime(&v, "until", q.Until)
	if f.Since != nil && f.Until != nil && !f.Since.Before(*f.Until) {
		v.Add("until", "must be after since")
	}
	if err := v.Err(); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// parseActor reads an actor filter.
func parseActor(s string) (Actor, bool) {
	switch s {
	case ActorOperator, ActorNetwork, ActorSystem:
		return Actor{Type: s}, true
	}
	if id, ok := httpx.ParseID(s); ok {
		return User(id), true
	}
	typ, id, ok := parseRef(s, ActorUser, ActorAPIKey)
	if !ok {
		return Actor{}, false
	}
	return Actor{Type: typ, ID: id}, true
}

// entryJSON is the resource of docs/api.md, §Audit log.
type entryJSON struct {
	ID        int64           `json:"id"`
	Actor     actorJSON       `json:"actor"`
	Action    string          `json:"action"`
	Target    targetJSON      `json:"target"`
	Details   json.RawMessage `json:"details"`
	CreatedAt string          `json:"created_at"`
}

type actorJSON struct {
	Type string  `json:"type"`
	ID   *int64  `json:"id"`
	Name *string `json:"name"`
}

type targetJSON struct {
	Type string `json:"type"`
	ID   int64  `json:"id"`
}

// MarshalJSON renders the entry resource: the actor's id and name null when
// unknown (and always for the operator, the network and the system), the
// time RFC 3339 in UTC to the second.
func (e Entry) MarshalJSON() ([]byte, error) {
	a := actorJSON{Type: e.Actor.Type}
	if e.Actor.ID > 0 {
		id := e.Actor.ID
		a.ID = &id
	}
	if e.Actor.Name != "" {
		name := e.Actor.Name
		a.Name = &name
	}
	details, err := json.Marshal(e.Details)
	if err != nil {
		return nil, fmt.Errorf("audit entry %d: details: %w", e.ID, err)
	}
	if e.Details == nil {
		details = []byte("{}")
	}
	return json.Marshal(entryJSON{
		ID:        e.ID,
		Actor:     a,
		Action:    e.Action,
		Target:    targetJSON(e.Target),
		Details:   details,
		CreatedAt: clock.Format(e.At),
	})
}

// List returns the organization's entries matching q, newest first, one
// page at a time. A bad parameter is a 422 naming it.
func (s *Service) List(ctx context.Context, orgID int64, q Query) (page.Of[Entry], error) {
	f, err := q.Parse()
	if err != nil {
		return page.Of[Entry]{}, err
	}
	return s.ListFilter(ctx, orgID, f)
}

// ListFilter is List for a Filter already parsed.
func (s *Service) ListFilter(ctx context.Context, orgID int64, f Filter) (page.Of[Entry], error) {
	userID, keyID := f.Actor.columns()
	target := ""
	if f.Target.Type != "" {
		target = f.Target.String()
	}
	var rows []entryRow
	q := s.db.Bun.NewSelect().Model(&rows).
		Column("id", "actor_type", "action", "target", "details", "created_at").
		ColumnExpr("coalesce(a.actor_user_id, a.actor_api_key_id, 0) AS actor_id").
		ColumnExpr("coalesce(a.actor_name, '') AS actor_name").
		Where("a.organization_id = ?", orgID)
	if f.Page.After > 0 {
		q = q.Where("a.id < ?", f.Page.After)
	}
	if f.Actor.Type != "" {
		q = q.Where("a.actor_type = ?", f.Actor.Type)
	}
	if userID > 0 {
		q = q.Where("a.actor_user_id = ?", userID)
	}
	if keyID > 0 {
		q = q.Where("a.actor_api_key_id = ?", keyID)
	}
	if f.Action != "" {
		q = q.Where("a.action = ?", f.Action)
	}
	if f.Family != "" {
		q = q.Where("split_part(a.action, '.', 1) = ?", f.Family)
	}
	if target != "" {
		q = q.Where("a.target = ?", target)
	}
	if f.Since != nil {
		q = q.Where("a.created_at >= ?", *f.Since)
	}
	if f.Until != nil {
		q = q.Where("a.created_at < ?", *f.Until)
	}
	if err := q.OrderExpr("a.id DESC").Limit(int64(f.Page.Limit) + 1).Scan(ctx); err != nil {
		return page.Of[Entry]{}, fmt.Errorf("list audit log: %w", err)
	}
	out := make([]Entry, 0, len(rows))
	for _, r := range rows {
		e := Entry{ID: r.ID, OrgID: orgID, Actor: Actor{Type: r.ActorType, ID: r.ActorID, Name: r.ActorName},
			Action: r.Action, Details: r.Details, At: r.CreatedAt}
		if t, ok := ParseTarget(r.Target); ok {
			e.Target = t
		}
		out = append(out, e)
	}
	entries, next := page.Cut(f.Page, out, func(e Entry) int64 { return e.ID })
	return page.Of[Entry]{Items: entries, NextCursor: next}, nil
}
