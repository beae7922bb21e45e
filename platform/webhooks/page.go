package webhooks

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bizmsg/platform/platform/apperr"
)

// Page bounds of the lists (docs/api.md, §Conventions: lists).
const (
	DefaultPageLimit = 25
	MaxPageLimit     = 100
)

// cursorPrefix versions the opaque cursor format.
const cursorPrefix = "id:"

// page selects one page of a list ordered by id, newest first.
type page struct {
	limit int
	// after is the id the previous page ended at (exclusive); 0 for the
	// first page.
	after int64
}

// parsePage reads the limit and cursor query parameters; a limit outside
// 1..MaxPageLimit or a cursor this API did not hand out is a 422 naming it.
func parsePage(limit, cursor string) (page, error) {
	var v apperr.Validation
	p := parsePageInto(&v, limit, cursor)
	if err := v.Err(); err != nil {
		return page{}, err
	}
	return p, nil
}

// parsePageInto is parsePage recording its problems in v, for lists with
// filters of their own.
func parsePageInto(v *apperr.Validation, limit, cursor string) page {
	p := page{limit: DefaultPageLimit}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > MaxPageLimit {
			v.Add("limit", "must be an integer from 1 to "+strconv.Itoa(MaxPageLimit))
		}
		p.limit = n
	}
	if cursor != "" {
		after, ok := decodeCursor(cursor)
		if !ok {
			v.Add("cursor", "is not a cursor returned by this list")
		}
		p.after = after
	}
	return p
}

// Page is one page of a list: the items, newest first, and the cursor of
// the next page ("" on the last).
type Page[T any] struct {
	// Items are the page's items, newest first.
	Items []T
	// NextCursor fetches the next page; "" on the last.
	NextCursor string
}

// MarshalJSON renders the list body: {"data": [...], "next_cursor": "..." | null}.
func (p Page[T]) MarshalJSON() ([]byte, error) {
	out := struct {
		Data       []T     `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}{Data: p.Items}
	if out.Data == nil {
		out.Data = []T{}
	}
	if p.NextCursor != "" {
		out.NextCursor = &p.NextCursor
	}
	return json.Marshal(out)
}

// cut trims rows (fetched with limit+1) to the page and sets the next
// page's cursor.
func cut[T any](p page, rows []T, id func(T) int64) Page[T] {
	if len(rows) <= p.limit {
		return Page[T]{Items: rows}
	}
	rows = rows[:p.limit]
	return Page[T]{Items: rows, NextCursor: encodeCursor(id(rows[len(rows)-1]))}
}

func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
}

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
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}
