package webhooks

import (
	"context"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/page"
)

// listPage runs query, which selects one list's rows newest first with
// the limit p.Limit+1, scans each row with scan and returns the page of p
// with the next page's cursor.
func listPage[T any](ctx context.Context, sql *db.Prepared, query string, args []any, p page.Query,
	scan func(db.Rows, *T) error, id func(T) int64) (page.Of[T], error) {
	var list []T
	err := sql.Query(ctx, nil, query, args, func(r db.Rows) error {
		for r.Next() {
			var v T
			if err := scan(r, &v); err != nil {
				return err
			}
			list = append(list, v)
		}
		return nil
	})
	if err != nil {
		return page.Of[T]{}, err
	}
	items, next := page.Cut(p, list, id)
	return page.Of[T]{Items: items, NextCursor: next}, nil
}
