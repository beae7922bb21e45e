// Package page is the paging of list endpoints: a limit and an opaque
// cursor over rows ordered by id, newest first (docs/api.md, §Conventions:
// lists).
package page

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/bizmsg/platform/platform/apperr"
)

// Query bounds for list endpoints (docs/api.md, §Conventions: lists).
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// cursorPrefix versions the opaque cursor format.
const cursorPrefix = "id:"

// Query selects one page of a list ordered by id, newest first.
type Query struct {
	// Limit is 1..MaxLimit.
	Limit int
	// After is the id the previous page ended at (exclusive); 0 for the
	// first page.
	After int64
}

// Parse reads the limit and cursor query parameters. An empty limit is
// DefaultLimit; a limit outside 1..MaxLimit or not an integer, or a
// cursor this API did not hand out, is a 422 naming the parameter.
func Parse(limit, cursor string) (Query, error) {
	var v apperr.Validation
	p := ParseInto(&v, limit, cursor)
	if err := v.Err(); err != nil {
		return Query{}, err
	}
	return p, nil
}

// ParseInto is Parse recording its problems in v, for lists with filters
// of their own (one 422 names every bad parameter).
func ParseInto(v *apperr.Validation, limit, cursor string) Query {
	p := Query{Limit: DefaultLimit}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxLimit {
			v.Add("limit", "must be an integer from 1 to "+strconv.Itoa(MaxLimit))
		}
		p.Limit = n
	}
	if cursor != "" {
		after, ok := decodeCursor(cursor)
		if !ok {
			v.Add("cursor", "is not a cursor returned by this list")
		}
		p.After = after
	}
	return p
}

// Select makes sel (a bun select of a list) fetch p's page: ordered by
// column id (SQL, e.g. "t.id"), newest first, after p's cursor, Limit+1
// rows (Cut).
func (p Query) Select(sel *bun.SelectQuery, id string) *bun.SelectQuery {
	sel.OrderExpr(id + " DESC").Limit(int64(p.Limit + 1))
	if p.After != 0 {
		sel.Where(id+" < ?", p.After)
	}
	return sel
}

// Cut trims rows (fetched with Limit+1) to the page and returns the next
// page's cursor, "" when there is none.
func Cut[T any](p Query, rows []T, id func(T) int64) ([]T, string) {
	if len(rows) <= p.Limit {
		return rows, ""
	}
	rows = rows[:p.Limit]
	return rows, encodeCursor(id(rows[len(rows)-1]))
}

func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
}

// decodeCursor reads a cursor encodeCursor made, and nothing else: the
// decoder alone would skip line breaks and accept other spellings of the
// same bytes, so the id is written back and must give s again.
func decodeCursor(s string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 || encodeCursor(id) != s {
		return 0, false
	}
	return id, true
}

// Of is one page of a list: its items, newest first, and the cursor of
// the next page.
type Of[T any] struct {
	Items []T
	// NextCursor fetches the next page; "" on the last.
	NextCursor string
}

// MarshalJSON renders the list body: {"data": [...], "next_cursor": "..." | null}.
func (p Of[T]) MarshalJSON() ([]byte, error) {
	out := struct {
		Data       []T     `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}{Data: p.Items, NextCursor: NextCursor(p.NextCursor)}
	if out.Data == nil {
		out.Data = []T{}
	}
	return json.Marshal(out)
}

// NextCursor renders a next-page cursor for a list response: nil (JSON
// null) on the last page.
func NextCursor(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ParseTime reads a list's time filter (since, until): empty is none; else
// an RFC 3339 date-time (surrounding spaces allowed), returned in UTC, or a
// problem recorded in v under field.
func ParseTime(v *apperr.Validation, field, raw string) *time.Time {
	if raw == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(raw))
	if err != nil {
		v.Add(field, "must be an RFC 3339 date-time such as 2026-11-22T14:03:05Z")
		return nil
	}
	t = t.UTC()
	return &t
}
