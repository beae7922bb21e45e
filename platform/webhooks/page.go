package webhooks

import (
	"encoding/json"

	"github.com/bizmsg/platform/platform/page"
)

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
func cut[T any](p page.Query, rows []T, id func(T) int64) Page[T] {
	items, next := page.Cut(p, rows, id)
	return Page[T]{Items: items, NextCursor: next}
}
