package webhooks

import "github.com/bizmsg/platform/platform/page"

// cut trims rows (fetched with limit+1) to the page and sets the next
// page's cursor.
func cut[T any](p page.Query, rows []T, id func(T) int64) page.Of[T] {
	items, next := page.Cut(p, rows, id)
	return page.Of[T]{Items: items, NextCursor: next}
}
