package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/page"
)

// Service reads the audit log. It is safe for concurrent use.
type Service struct {
	pool *pgxpool.Pool
}

// Config configures a Service.
type Config struct {
	// Pool is the database the audit log is read from. Required.
	Pool *pgxpool.Pool
}

// New validates cfg and returns the audit log's reader.
func New(cfg Config) (*Service, error) {
	if cfg.Pool == nil {
		return nil, errors.New("audit: Config.Pool is required")
	}
	return &Service{pool: cfg.Pool}, nil
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
	rows, err := s.pool.Query(ctx, `
		SELECT id, actor_type, coalesce(actor_user_id, actor_api_key_id, 0), coalesce(actor_name, ''),
		       action, target, details, created_at
		FROM central.audit_log
		WHERE organization_id = $1
		  AND ($2::bigint = 0 OR id < $2)
		  AND ($3::text = '' OR actor_type = $3)
		  AND ($4::bigint = 0 OR actor_user_id = $4)
		  AND ($5::bigint = 0 OR actor_api_key_id = $5)
		  AND ($6::text = '' OR action = $6)
		  AND ($7::text = '' OR split_part(action, '.', 1) = $7)
		  AND ($8::text = '' OR target = $8)
		  AND ($9::timestamptz IS NULL OR created_at >= $9)
		  AND ($10::timestamptz IS NULL OR created_at < $10)
		ORDER BY id DESC
		LIMIT $11`,
		orgID, f.Page.After, f.Actor.Type, userID, keyID, f.Action, f.Family, target, f.Since, f.Until, f.Page.Limit+1)
	if err != nil {
		return page.Of[Entry]{}, fmt.Errorf("list audit log: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var (
			e       Entry
			target  string
			details []byte
		)
		if err := rows.Scan(&e.ID, &e.Actor.Type, &e.Actor.ID, &e.Actor.Name, &e.Action, &target, &details, &e.At); err != nil {
			return page.Of[Entry]{}, fmt.Errorf("scan audit entry: %w", err)
		}
		e.OrgID = orgID
		if t, ok := ParseTarget(target); ok {
			e.Target = t
		}
		if err := json.Unmarshal(details, &e.Details); err != nil {
			return page.Of[Entry]{}, fmt.Errorf("audit entry %d: details: %w", e.ID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return page.Of[Entry]{}, fmt.Errorf("list audit log: %w", err)
	}
	entries, next := page.Cut(f.Page, out, func(e Entry) int64 { return e.ID })
	return page.Of[Entry]{Items: entries, NextCursor: next}, nil
}
