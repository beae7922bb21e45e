package accounts

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// PurgeRefreshTokens deletes refresh tokens that expired more than a day ago
// (the day keeps recently expired tokens around for reuse detection).
func PurgeRefreshTokens(ctx context.Context, idb bun.IDB, now time.Time) (int64, error) {
	res, err := idb.NewDelete().TableExpr("central.refresh_tokens").
		Where("expires_at < ?", now.Add(-24*time.Hour)).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("purge refresh tokens: %w", err)
	}
	return res.RowsAffected()
}
